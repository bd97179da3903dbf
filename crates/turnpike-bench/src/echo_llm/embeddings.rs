//! `POST /v1/embeddings` of `echo --llm`: deterministic vectors where texts that share
//! tokens are near (a bag of the lowercased text's token ids, each id hashed to one
//! dimension, L2-normalised), so a semantic cache's threshold can be tested: the same
//! text gives cosine 1, texts without a common token about 0. The same vectors in
//! Gemini's (`:embedContent`, `:batchEmbedContents`) and Bedrock's `InvokeModel` shapes
//! (Titan Text Embeddings, Cohere Embed), for a gateway's translation of them.

use base64::Engine as _;
use serde_json::{json, Value};
use turnpike_tokens::Encoding;

use super::parse::Failure;

/// Most inputs in one request, and most tokens in one input (OpenAI's limits).
const MAX_INPUTS: usize = 2048;
const MAX_INPUT_TOKENS: usize = 8192;

/// The answer to an embeddings request.
pub(super) fn embeddings(body: &Value, model: &str) -> Result<Value, Failure> {
    let enc = Encoding::for_model(model);
    let inputs = inputs(body, enc)?;
    let full = if model.contains("-large") { 3072 } else { 1536 };
    let dims = match body.get("dimensions") {
        None | Some(Value::Null) => full,
        Some(v) => match v.as_u64().and_then(|d| usize::try_from(d).ok()) {
            Some(d) if (1..=full).contains(&d) => d,
            _ => return Err(Failure::bad("dimensions", format!("must be 1..={full}"))),
        },
    };
    let base64 = match body.get("encoding_format").and_then(Value::as_str) {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => {
            return Err(Failure::bad(
                "encoding_format",
                format!("unknown format {other:?}"),
            ))
        }
    };
    let mut tokens = 0u64;
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, ids)| {
            tokens += ids.len() as u64;
            let v = vector(ids, dims);
            let embedding = if base64 {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(v)
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    Ok(json!({
        "object": "list", "data": data, "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}
    }))
}

/// Gemini's `embedContent` (`batch`: `batchEmbedContents`) answer: 768 dimensions
/// unless `outputDimensionality` says otherwise; no token count (Gemini gives none).
pub(super) fn gemini(body: &Value, model: &str, batch: bool) -> Result<Value, Failure> {
    let enc = Encoding::for_model(model);
    let one = |r: &Value| -> Result<Value, Failure> {
        let text: String = r["content"]["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["text"].as_str())
            .collect();
        let ids = inputs(&json!({"input": text}), enc)?.remove(0);
        let dims = r["outputDimensionality"]
            .as_u64()
            .map_or(768, |d| d as usize);
        if !(1..=3072).contains(&dims) {
            return Err(Failure::bad("outputDimensionality", "must be 1..=3072"));
        }
        Ok(json!({"values": vector(&ids, dims)}))
    };
    if !batch {
        return Ok(json!({"embedding": one(body)?}));
    }
    let requests = body["requests"]
        .as_array()
        .filter(|r| !r.is_empty() && r.len() <= 100)
        .ok_or_else(|| Failure::bad("requests", "1 to 100 requests"))?;
    let all = requests.iter().map(one).collect::<Result<Vec<_>, _>>()?;
    Ok(json!({"embeddings": all}))
}

/// Bedrock `InvokeModel` of an embeddings model: Titan Text Embeddings (`inputText`,
/// `dimensions`, 1024 by default; the token count in `inputTextTokenCount`) or Cohere
/// Embed (`texts`, 1024 dimensions, `embeddings` as a list).
pub(super) fn bedrock(body: &Value, model: &str) -> Result<Value, Failure> {
    let enc = Encoding::Cl100kBase;
    if model.contains("titan-embed") {
        let ids = inputs(&json!({"input": body["inputText"]}), enc)?.remove(0);
        let dims = body["dimensions"].as_u64().map_or(1024, |d| d as usize);
        if ![256, 512, 1024].contains(&dims) {
            return Err(Failure::bad("dimensions", "must be 256, 512 or 1024"));
        }
        let v = vector(&ids, dims);
        return Ok(json!({"embedding": v, "inputTextTokenCount": ids.len(),
                         "embeddingsByType": {"float": v}}));
    }
    if model.contains("cohere.embed") {
        let texts = body["texts"]
            .as_array()
            .filter(|t| !t.is_empty() && t.len() <= 96);
        let texts = texts.ok_or_else(|| Failure::bad("texts", "1 to 96 texts"))?;
        let ids = inputs(&json!({"input": texts}), enc)?;
        let all: Vec<Vec<f32>> = ids.iter().map(|i| vector(i, 1024)).collect();
        return Ok(
            json!({"id": "echo", "embeddings": all, "response_type": "embeddings_floats",
                         "texts": texts}),
        );
    }
    Err(Failure::bad(
        "model",
        format!("{model} is not an embeddings model"),
    ))
}

/// Each input's token ids: a string (lowercased, then encoded), an array of strings, an
/// array of token ids, or an array of arrays of token ids.
fn inputs(body: &Value, enc: Encoding) -> Result<Vec<Vec<u32>>, Failure> {
    let one = |v: &Value| -> Result<Vec<u32>, Failure> {
        let ids = match v {
            Value::String(s) if !s.is_empty() => enc.encode(&s.to_lowercase()),
            Value::Array(ids) if !ids.is_empty() => ids
                .iter()
                .map(|i| i.as_u64().and_then(|i| u32::try_from(i).ok()))
                .collect::<Option<Vec<u32>>>()
                .ok_or_else(|| Failure::bad("input", "token ids must be integers"))?,
            _ => {
                return Err(Failure::bad(
                    "input",
                    "must be a non-empty string or token array",
                ))
            }
        };
        if ids.len() > MAX_INPUT_TOKENS {
            return Err(Failure::bad(
                "input",
                format!(
                    "{} tokens, over the maximum context length of {MAX_INPUT_TOKENS}",
                    ids.len()
                ),
            ));
        }
        Ok(ids)
    };
    match body.get("input") {
        None | Some(Value::Null) => Err(Failure::bad("input", "Field required")),
        Some(Value::Array(items)) if items.len() > MAX_INPUTS => Err(Failure::bad(
            "input",
            format!("{} inputs, over the limit of {MAX_INPUTS}", items.len()),
        )),
        Some(Value::Array(items)) if items.first().is_some_and(|i| i.is_number()) => {
            Ok(vec![one(&Value::Array(items.clone()))?])
        }
        Some(Value::Array(items)) if !items.is_empty() => items.iter().map(one).collect(),
        Some(v) => Ok(vec![one(v)?]),
    }
}

/// The normalised bag of token ids in `dims` dimensions.
fn vector(ids: &[u32], dims: usize) -> Vec<f32> {
    let mut v = vec![0f32; dims];
    for &id in ids {
        // Knuth's multiplicative hash spreads neighbouring ids over the dimensions.
        let slot = (u64::from(id).wrapping_mul(2_654_435_761) % dims as u64) as usize;
        v[slot] += 1.0;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    fn embed(text: &str) -> Vec<f32> {
        vector(&Encoding::Cl100kBase.encode(&text.to_lowercase()), 1536)
    }

    #[test]
    fn same_text_is_identical_and_shared_words_are_near() {
        let a = embed("What is the capital of France?");
        assert!((cosine(&a, &embed("what is the capital of france?")) - 1.0).abs() < 1e-5);
        let near = cosine(&a, &embed("What is the capital of Germany?"));
        let far = cosine(&a, &embed("Bananas grow quickly in warm climates"));
        assert!(near > 0.7, "{near}");
        assert!(far < 0.3, "{far}");
    }

    #[test]
    fn inputs_are_capped_and_checked() {
        let enc = Encoding::Cl100kBase;
        assert_eq!(
            inputs(&json!({"input": ["a", "b"]}), enc)
                .expect("ok")
                .len(),
            2
        );
        assert_eq!(
            inputs(&json!({"input": [1, 2, 3]}), enc).expect("ok"),
            vec![vec![1, 2, 3]]
        );
        assert!(inputs(&json!({"input": ""}), enc).is_err());
        assert!(inputs(&json!({"input": vec!["x"; MAX_INPUTS + 1]}), enc).is_err());
        assert!(embeddings(&json!({"input": "x", "dimensions": 0}), "m").is_err());
    }
}
