//! `multipart/form-data` (RFC 7578) as WSO2's import endpoints take it: the parts of a
//! body already read whole (the body limit applies first), each with its `name`, its
//! `filename` when it is a file, and its bytes. Bounded: at most [`MAX_PARTS`] parts,
//! header blocks of at most [`MAX_HEADERS`] bytes; anything malformed is an error,
//! never a panic.

/// One part of the form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part<'a> {
    pub name: String,
    pub filename: Option<String>,
    pub body: &'a [u8],
}

pub const MAX_PARTS: usize = 32;
pub const MAX_HEADERS: usize = 8 * 1024;

/// The boundary of a `multipart/form-data` content type.
pub fn boundary(content_type: &str) -> Option<String> {
    let (mime, params) = content_type.split_once(';')?;
    if !mime.trim().eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    params.split(';').find_map(|p| {
        let (k, v) = p.split_once('=')?;
        if !k.trim().eq_ignore_ascii_case("boundary") {
            return None;
        }
        let v = v.trim().trim_matches('"');
        (!v.is_empty() && v.len() <= 70).then(|| v.to_string())
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A parameter (`name="x"`) of a Content-Disposition value.
fn param(disposition: &str, key: &str) -> Option<String> {
    disposition.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case(key)
            .then(|| v.trim().trim_matches('"').to_string())
    })
}

/// Splits `body` into its parts.
pub fn parse<'a>(body: &'a [u8], boundary: &str) -> Result<Vec<Part<'a>>, &'static str> {
    let delimiter = format!("--{boundary}");
    let delimiter = delimiter.as_bytes();
    let start = find(body, delimiter).ok_or("no boundary in the body")?;
    let mut rest = &body[start + delimiter.len()..];
    let mut parts = Vec::new();
    let next_delimiter = [b"\r\n".as_slice(), delimiter].concat();
    loop {
        if rest.starts_with(b"--") {
            return Ok(parts);
        }
        rest = rest
            .strip_prefix(b"\r\n")
            .ok_or("a boundary line must end with CRLF")?;
        let head_end = find(&rest[..rest.len().min(MAX_HEADERS + 4)], b"\r\n\r\n")
            .ok_or("a part's headers do not end (or are too long)")?;
        let head =
            std::str::from_utf8(&rest[..head_end]).map_err(|_| "a part's headers are not UTF-8")?;
        let content = &rest[head_end + 4..];
        let end = find(content, &next_delimiter).ok_or("a part does not end with the boundary")?;
        let disposition = head
            .split("\r\n")
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case("content-disposition")
                    .then_some(v.trim())
            })
            .ok_or("a part has no Content-Disposition")?;
        let name = param(disposition, "name").ok_or("a part has no name")?;
        if parts.len() == MAX_PARTS {
            return Err("too many parts");
        }
        parts.push(Part {
            name,
            filename: param(disposition, "filename"),
            body: &content[..end],
        });
        rest = &content[end + next_delimiter.len()..];
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FORM: &[u8] = b"preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"pets.yaml\"\r\nContent-Type: application/yaml\r\n\r\nopenapi: 3.0.3\r\n--XyZ\r\ncontent-disposition: form-data; name=additionalProperties\r\n\r\n{\"context\": \"/pets\"}\r\n--XyZ--\r\n";

    #[test]
    fn reads_a_form() {
        assert_eq!(
            boundary("multipart/form-data; boundary=\"XyZ\"").as_deref(),
            Some("XyZ")
        );
        assert_eq!(boundary("application/json; boundary=XyZ"), None);
        let parts = parse(FORM, "XyZ").unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].name, "file");
        assert_eq!(parts[0].filename.as_deref(), Some("pets.yaml"));
        assert_eq!(parts[0].body, b"openapi: 3.0.3");
        assert_eq!(parts[1].name, "additionalProperties");
        assert_eq!(parts[1].body, b"{\"context\": \"/pets\"}");
    }

    #[test]
    fn refuses_broken_forms() {
        for bad in [
            &b""[..],
            b"--XyZ\r\n",
            b"--XyZ\r\nno-end",
            b"--XyZ\r\nX: y\r\n\r\nbody--XyZ--",
        ] {
            assert!(
                parse(bad, "XyZ").is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
        /// Fuzz: any bytes, and any mutation of a good form, parse or fail; never panic.
        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512), cut in 0usize..200, flip in 0usize..200) {
            let _ = parse(&bytes, "XyZ");
            let mut form = FORM.to_vec();
            if let Some(b) = form.get_mut(flip) { *b ^= 0x20; }
            form.truncate(cut.max(1) * 2);
            let _ = parse(&form, "XyZ");
        }
    }
}
