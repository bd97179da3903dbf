"""What the MCP test scripts share: a tool result as the Rust tests read it."""


def result_of(r):
    """A CallToolResult as JSON: is_error, structured content, the first text."""
    return {
        "is_error": bool(r.is_error),
        "structured": r.structured_content,
        "text": r.content[0].text if r.content else None,
    }
