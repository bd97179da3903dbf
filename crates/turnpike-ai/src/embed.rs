//! `/embeddings` on the OpenAI front for providers whose embeddings API is not
//! OpenAI's: Gemini (`models/{m}:embedContent` for one text, `:batchEmbedContents` for
//! several) and Bedrock's `InvokeModel` (`/model/{id}/invoke`) for the two model
//! families whose shapes are known here: Amazon Titan Text Embeddings (`amazon.titan-
//! embed-text-*`: one text a call, `dimensions` 256, 512 or 1024 on v2) and Cohere
//! Embed (`cohere.embed-*`: up to 96 texts, `input_type: search_document`). Other
//! Bedrock model families are refused 400. Inputs must be text (token-id inputs have no
//! meaning to these providers). The answer becomes OpenAI's list of vectors, as floats
//! or, when asked (`encoding_format: base64`, the openai SDKs' default), as base64
//! little-endian f32s; the usage is the provider's count where it gives one (Titan),
//! else the gateway's estimate of the request.

use base64::Engine as _;
use serde_json::{json, Map, Value};
use turnpike_model::ai::ProviderKind;

use crate::usage::Counts;

/// Cohere Embed's most texts a call (Bedrock's limit).
const MAX_COHERE_TEXTS: usize = 96;
/// Gemini's most requests in one batch.
const MAX_GEMINI_BATCH: usize = 100;

/// A Bedrock embeddings model family.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Family {
    Titan,
    Cohere,
}

fn family(model: &str) -> Result<Family, String> {
    // A cross-region profile id (`us.cohere.embed-v4:0`) names its model after the region.
    let m = model
        .split_once('.')
        .filter(|(r, _)| r.len() == 2)
        .map_or(model, |(_, m)| m);
    if m.starts_with("amazon.titan-embed-text") {
        Ok(Family::Titan)
    } else if m.starts_with("cohere.embed") {
        Ok(Family::Cohere)
    } else {
        Err(format!(
            "Bedrock embeddings are translated for Titan Text Embeddings and Cohere Embed models only, not {model:?}"
        ))
    }
}

/// The texts to embed: a string or an array of strings.
fn texts(body: &Map<String, Value>) -> Result<Vec<&str>, String> {
    let texts = match body.get("input") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a
            .iter()
            .map(Value::as_str)
            .collect::<Option<Vec<_>>>()
            .ok_or("`input` must be text for this provider (token ids are not translated)")?,
        _ => return Err("`input` must be a string or an array of strings".into()),
    };
    if texts.is_empty() || texts.iter().any(|t| t.is_empty()) {
        return Err("`input` must not be empty".into());
    }
    Ok(texts)
}

/// The provider's path and body for an embeddings call of `model`.
pub(crate) fn request(
    kind: ProviderKind,
    body: &Map<String, Value>,
    model: &str,
    segment: &str,
) -> Result<(String, Value), String> {
    let texts = texts(body)?;
    let dims = body.get("dimensions").and_then(Value::as_u64);
    match kind {
        ProviderKind::Gemini => Ok(gemini(&texts, model, segment, dims)?),
        ProviderKind::Bedrock => {
            let path = format!("/model/{segment}/invoke");
            Ok((path, bedrock(family(model)?, &texts, dims)?))
        }
        _ => Err("this provider's embeddings are OpenAI's".into()),
    }
}

fn gemini(
    texts: &[&str],
    model: &str,
    segment: &str,
    dims: Option<u64>,
) -> Result<(String, Value), String> {
    let one = |t: &&str| {
        let mut r =
            json!({"model": format!("models/{model}"), "content": {"parts": [{"text": t}]}});
        if let Some(d) = dims {
            r["outputDimensionality"] = d.into();
        }
        r
    };
    match texts {
        [t] => Ok((format!("/models/{segment}:embedContent"), one(t))),
        _ if texts.len() > MAX_GEMINI_BATCH => Err(format!(
            "at most {MAX_GEMINI_BATCH} inputs a call for Gemini"
        )),
        _ => {
            let requests: Vec<Value> = texts.iter().map(one).collect();
            Ok((
                format!("/models/{segment}:batchEmbedContents"),
                json!({"requests": requests}),
            ))
        }
    }
}

fn bedrock(f: Family, texts: &[&str], dims: Option<u64>) -> Result<Value, String> {
    match f {
        Family::Titan => {
            let [t] = texts else {
                return Err("Titan Text Embeddings take one input a call".into());
            };
            let mut b = json!({"inputText": t});
            if let Some(d) = dims {
                if ![256, 512, 1024].contains(&d) {
                    return Err(
                        "`dimensions` must be 256, 512 or 1024 for Titan Text Embeddings v2".into(),
                    );
                }
                b["dimensions"] = d.into();
            }
            Ok(b)
        }
        Family::Cohere if texts.len() > MAX_COHERE_TEXTS => Err(format!(
            "at most {MAX_COHERE_TEXTS} inputs a call for Cohere Embed"
        )),
        Family::Cohere if dims.is_some() => {
            Err("Cohere Embed on Bedrock takes no `dimensions`".into())
        }
        Family::Cohere => {
            Ok(json!({"texts": texts, "input_type": "search_document", "truncate": "END"}))
        }
    }
}

/// The vectors of a provider's answer, in input order.
fn vectors(kind: ProviderKind, model: &str, v: &Value) -> Option<(Vec<Vec<f64>>, Option<u64>)> {
    let floats = |a: &Value| {
        a.as_array()?
            .iter()
            .map(Value::as_f64)
            .collect::<Option<Vec<f64>>>()
    };
    match kind {
        ProviderKind::Gemini => match (v.get("embedding"), v.get("embeddings")) {
            (Some(e), _) => Some((vec![floats(&e["values"])?], None)),
            (_, Some(Value::Array(all))) => {
                let list = all
                    .iter()
                    .map(|e| floats(&e["values"]))
                    .collect::<Option<Vec<_>>>()?;
                Some((list, None))
            }
            _ => None,
        },
        _ => match family(model).ok()? {
            Family::Titan => Some((
                vec![floats(&v["embedding"])?],
                v["inputTextTokenCount"].as_u64(),
            )),
            Family::Cohere => {
                // `embeddings` is the list, or by type (`{"float": [...]}`) when types were asked.
                let e = v.get("embeddings")?;
                let list = e.get("float").unwrap_or(e).as_array()?;
                Some((list.iter().map(floats).collect::<Option<Vec<_>>>()?, None))
            }
        },
    }
}

/// A provider's embeddings answer in OpenAI's shape, and its counts (`estimate`: the
/// prompt tokens when the provider gives none).
pub(crate) fn response(
    kind: ProviderKind,
    model: &str,
    v: &Value,
    base64: bool,
    estimate: u64,
) -> Option<(Value, Counts)> {
    let (list, tokens) = vectors(kind, model, v)?;
    let data: Vec<Value> = list
        .iter()
        .enumerate()
        .map(|(index, e)| {
            let embedding = if base64 {
                let bytes: Vec<u8> = e.iter().flat_map(|x| (*x as f32).to_le_bytes()).collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(e)
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    let prompt = tokens.unwrap_or(estimate);
    let out = json!({"object": "list", "data": data, "model": model,
                     "usage": {"prompt_tokens": prompt, "total_tokens": prompt}});
    Some((
        out,
        Counts {
            prompt,
            completion: 0,
            cached: 0,
        },
    ))
}

/// Whether an embeddings request asks for base64 vectors.
pub(crate) fn wants_base64(body: &Map<String, Value>) -> bool {
    body.get("encoding_format").and_then(Value::as_str) == Some("base64")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn gemini_embeds_one_text_or_a_batch() {
        let (path, b) = request(
            ProviderKind::Gemini,
            &body(json!({"input": "hi", "dimensions": 8})),
            "text-embedding-004",
            "text-embedding-004",
        )
        .expect("ok");
        assert_eq!(path, "/models/text-embedding-004:embedContent");
        assert_eq!(
            b,
            json!({"model": "models/text-embedding-004", "content": {"parts": [{"text": "hi"}]}, "outputDimensionality": 8})
        );
        let (path, b) = request(
            ProviderKind::Gemini,
            &body(json!({"input": ["a", "b"]})),
            "m",
            "m",
        )
        .expect("ok");
        assert_eq!(path, "/models/m:batchEmbedContents");
        assert_eq!(b["requests"][1]["content"]["parts"][0]["text"], "b");
        let answer = json!({"embeddings": [{"values": [0.5, 1.0]}, {"values": [1.0, 0.0]}]});
        let (out, c) = response(ProviderKind::Gemini, "m", &answer, false, 7).expect("vectors");
        assert_eq!(out["data"][1]["embedding"], json!([1.0, 0.0]));
        assert_eq!(c.prompt, 7);
    }

    #[test]
    fn bedrock_titan_and_cohere_and_nothing_else() {
        let (path, b) = request(
            ProviderKind::Bedrock,
            &body(json!({"input": "hi", "dimensions": 256})),
            "amazon.titan-embed-text-v2:0",
            "amazon.titan-embed-text-v2%3A0",
        )
        .expect("ok");
        assert_eq!(path, "/model/amazon.titan-embed-text-v2%3A0/invoke");
        assert_eq!(b, json!({"inputText": "hi", "dimensions": 256}));
        assert!(request(
            ProviderKind::Bedrock,
            &body(json!({"input": ["a", "b"]})),
            "amazon.titan-embed-text-v2:0",
            "x"
        )
        .is_err());
        let (_, b) = request(
            ProviderKind::Bedrock,
            &body(json!({"input": ["a", "b"]})),
            "cohere.embed-english-v3",
            "x",
        )
        .expect("ok");
        assert_eq!(b["texts"], json!(["a", "b"]));
        let e = request(
            ProviderKind::Bedrock,
            &body(json!({"input": "a"})),
            "amazon.nova-embed",
            "x",
        )
        .expect_err("unknown family");
        assert!(e.contains("Titan"), "{e}");
        assert!(request(
            ProviderKind::Gemini,
            &body(json!({"input": [1, 2]})),
            "m",
            "m"
        )
        .is_err());

        let titan = json!({"embedding": [1.0, 0.0], "inputTextTokenCount": 3});
        let (out, c) = response(
            ProviderKind::Bedrock,
            "amazon.titan-embed-text-v2:0",
            &titan,
            true,
            99,
        )
        .expect("vectors");
        assert_eq!(c.prompt, 3);
        let b64 = out["data"][0]["embedding"].as_str().expect("base64");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .expect("decodes");
        assert_eq!(bytes.len(), 8);
        assert_eq!(
            f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            1.0
        );
        let cohere =
            json!({"embeddings": {"float": [[0.1], [0.2]]}, "response_type": "embeddings_by_type"});
        let (out, _) = response(
            ProviderKind::Bedrock,
            "cohere.embed-english-v3",
            &cohere,
            false,
            1,
        )
        .expect("vectors");
        assert_eq!(out["data"][1]["index"], 1);
    }
}
