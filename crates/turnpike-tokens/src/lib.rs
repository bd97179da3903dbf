//! Token counting with OpenAI's BPE encodings (`o200k_base`, `cl100k_base`; tiktoken's
//! tables through `tiktoken-rs`): the exact count for OpenAI models and the documented
//! estimate for every other model. The one home of the rule, so that what `turnpike echo
//! --llm` reports as usage and what the gateway counts when a provider reports none agree.
//!
//! Owns no IO and depends on no other Turnpike crate. A table (a few MB) is built on its
//! first use, once per process: a gateway whose APIs never count pays nothing.

use tiktoken_rs::CoreBPE;

/// Tokens each chat message adds besides its content, and the tokens that prime the
/// answer: OpenAI's published rule for gpt-3.5-turbo-0613 and later (the cookbook's
/// `num_tokens_from_messages`), used as the estimate for other providers too.
pub const PER_MESSAGE: u64 = 3;
pub const REPLY_PRIMING: u64 = 3;
/// What an image part counts as: OpenAI's price of one low-detail image.
pub const PER_IMAGE: u64 = 85;

/// A BPE encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// GPT-3.5, GPT-4 (not 4o), the `text-embedding-*` models.
    Cl100kBase,
    /// GPT-4o, GPT-4.1, GPT-5, the o-series; the estimate for every unknown model.
    O200kBase,
}

impl Encoding {
    /// The encoding a model uses (tiktoken's table of names and prefixes, `ft:` models
    /// by their base); `o200k_base` for a model it does not know (Claude, Llama, ...).
    pub fn for_model(model: &str) -> Encoding {
        use tiktoken_rs::tokenizer::{get_tokenizer, Tokenizer};
        match get_tokenizer(model) {
            Some(Tokenizer::Cl100kBase) => Encoding::Cl100kBase,
            _ => Encoding::O200kBase,
        }
    }

    fn bpe(self) -> &'static CoreBPE {
        match self {
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
            Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
        }
    }

    /// The token ids of `text` (special-token text is encoded as ordinary text).
    pub fn encode(self, text: &str) -> Vec<u32> {
        self.bpe().encode_ordinary(text)
    }

    /// The tokens of `text` (special-token text counts as ordinary text).
    pub fn count(self, text: &str) -> u64 {
        if text.is_empty() {
            return 0;
        }
        self.bpe().encode_ordinary(text).len() as u64
    }

    /// The longest start of `text` that encodes to at most `max` tokens, and its count.
    /// `None` when the whole text fits.
    pub fn truncate(self, text: &str, max: u64) -> Option<(String, u64)> {
        let bpe = self.bpe();
        let tokens = bpe.encode_ordinary(text);
        let mut keep = usize::try_from(max).unwrap_or(usize::MAX);
        if tokens.len() <= keep {
            return None;
        }
        // A prefix of tokens may end inside a character, and BPE may encode the decoded
        // prefix differently: shorten until the text re-encodes within the cap.
        loop {
            let bytes = bpe.decode_bytes(&tokens[..keep]).unwrap_or_default();
            let text = utf8_prefix(&bytes).to_owned();
            let n = self.count(&text);
            if n <= max || keep == 0 {
                return Some((text, n));
            }
            keep -= 1;
        }
    }

    /// `text` cut into the pieces a provider streams: each one token, or the few
    /// consecutive tokens that together complete a UTF-8 character. The pieces joined are
    /// `text`; there are at most [`Encoding::count`] of them.
    pub fn pieces(self, text: &str) -> Vec<String> {
        let bpe = self.bpe();
        let mut out = Vec::new();
        let mut pending: Vec<u8> = Vec::new();
        for token in bpe.encode_ordinary(text) {
            pending.extend(bpe.decode_bytes(&[token]).unwrap_or_default());
            if let Ok(piece) = std::str::from_utf8(&pending) {
                out.push(piece.to_owned());
                pending.clear();
            }
        }
        if !pending.is_empty() {
            out.push(String::from_utf8_lossy(&pending).into_owned());
        }
        out
    }
}

/// The longest valid UTF-8 start of `bytes`.
fn utf8_prefix(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
    }
}

/// A chat prompt's tokens, message by message, by OpenAI's rule: [`REPLY_PRIMING`] once,
/// then per message [`PER_MESSAGE`] plus its role and its content (each text part, each
/// image as [`PER_IMAGE`], tool calls and tool definitions as their JSON text).
#[derive(Clone, Debug)]
pub struct ChatCount {
    encoding: Encoding,
    total: u64,
}

impl ChatCount {
    pub fn new(encoding: Encoding) -> Self {
        ChatCount {
            encoding,
            total: REPLY_PRIMING,
        }
    }

    /// Starts a message: its overhead and its role.
    pub fn message(&mut self, role: &str) {
        self.total += PER_MESSAGE + self.encoding.count(role);
    }

    /// Adds text that belongs to the current message (or to the prompt: a system text,
    /// a tool's name, description and schema).
    pub fn text(&mut self, text: &str) {
        self.total += self.encoding.count(text);
    }

    pub fn image(&mut self) {
        self.total += PER_IMAGE;
    }

    pub fn total(&self) -> u64 {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_pick_their_encoding_and_unknown_ones_get_o200k() {
        assert_eq!(Encoding::for_model("gpt-4o-mini"), Encoding::O200kBase);
        assert_eq!(Encoding::for_model("gpt-4-0613"), Encoding::Cl100kBase);
        assert_eq!(
            Encoding::for_model("text-embedding-3-small"),
            Encoding::Cl100kBase
        );
        assert_eq!(
            Encoding::for_model("claude-sonnet-4-5"),
            Encoding::O200kBase
        );
    }

    #[test]
    fn counts_match_tiktoken() {
        // tiktoken 0.9: len(enc.encode("hello world")) for both encodings.
        assert_eq!(Encoding::O200kBase.count("hello world"), 2);
        assert_eq!(Encoding::Cl100kBase.count("hello world"), 2);
        assert_eq!(Encoding::O200kBase.count(""), 0);
    }

    #[test]
    fn pieces_join_to_the_text_and_never_split_a_character() {
        let text = "Grüße, 世界! naïve café 🚀 done";
        for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let pieces = enc.pieces(text);
            assert_eq!(pieces.concat(), text);
            assert!(pieces.len() as u64 <= enc.count(text));
            assert!(pieces.len() > 5, "{pieces:?}");
        }
    }

    #[test]
    fn truncate_keeps_at_most_max_tokens() {
        let text = "one two three four five six seven eight 🚀🚀🚀 nine ten";
        let enc = Encoding::O200kBase;
        assert_eq!(enc.truncate(text, 1000), None);
        for max in 0..enc.count(text) {
            let (cut, n) = enc.truncate(text, max).expect("cut");
            assert!(n <= max, "{max}: {n}");
            assert_eq!(enc.count(&cut), n);
            assert!(text.starts_with(&cut));
        }
    }

    #[test]
    fn chat_count_adds_overheads() {
        let mut c = ChatCount::new(Encoding::O200kBase);
        c.message("user");
        c.text("hello world");
        // priming 3 + message 3 + "user" 1 + "hello world" 2
        assert_eq!(c.total(), 9);
        c.image();
        assert_eq!(c.total(), 9 + PER_IMAGE);
    }
}
