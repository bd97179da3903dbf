//! Resource path templates: `/`, `/pets`, `/pets/{id}`, `/pets/{id}/photos`, and a
//! trailing `/*` wildcard (`/*`, `/pets/*`). Parsed once, then written out as the
//! matchit routes that serve them under an API's prefix.

/// One piece of a template between slashes.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Param,
}

/// A parsed, valid path template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    segments: Vec<Segment>,
    /// Ends in `/*`: matches the prefix itself and everything below it.
    wildcard: bool,
}

/// A route for the radix tree. `explicit` routes are what the template says; the
/// others are conveniences (the bare prefix of `/pets/*` is `/pets`) that give way when
/// an explicit route claims the same path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteSpec {
    pub route: String,
    pub explicit: bool,
}

const HINT: &str = "expected a path such as \"/pets\", \"/pets/{id}\", \"/pets/*\" or \"/*\"";

impl Template {
    pub fn parse(text: &str) -> Result<Template, String> {
        let Some(body) = text.strip_prefix('/') else {
            return Err(format!(
                "path template {text:?} must start with '/'; {HINT}"
            ));
        };
        let mut segments = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        let mut wildcard = false;
        if body.is_empty() {
            return Ok(Template { segments, wildcard });
        }
        let parts: Vec<&str> = body.split('/').collect();
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            if *part == "*" {
                if !last {
                    return Err(format!(
                        "in {text:?}, '*' may only be the last segment; {HINT}"
                    ));
                }
                wildcard = true;
            } else if let Some(name) = part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                check_param_name(text, name)?;
                if names.contains(&name) {
                    return Err(format!("in {text:?}, parameter {{{name}}} appears twice"));
                }
                names.push(name);
                segments.push(Segment::Param);
            } else {
                check_literal(text, part)?;
                segments.push(Segment::Literal((*part).to_owned()));
            }
        }
        Ok(Template { segments, wildcard })
    }

    /// Whether a literal segment holds an ASCII upper-case letter (a case-insensitive
    /// API matches lower-cased paths, so such a literal could never match there).
    pub fn has_upper_case(&self) -> bool {
        self.segments.iter().any(|s| match s {
            Segment::Literal(l) => l.bytes().any(|b| b.is_ascii_uppercase()),
            Segment::Param => false,
        })
    }

    /// The routes that serve this template below `prefix` (which has no trailing '/').
    pub fn routes(&self, prefix: &str) -> Vec<RouteSpec> {
        let mut base = prefix.to_owned();
        let mut n = 0;
        for s in &self.segments {
            base.push('/');
            match s {
                Segment::Literal(l) => base.push_str(l),
                Segment::Param => {
                    // Names are positional: the router does not hand parameters out,
                    // and equal shapes must collide whatever their names.
                    base.push_str(&format!("{{p{n}}}"));
                    n += 1;
                }
            }
        }
        let spec = |route: String, explicit| RouteSpec { route, explicit };
        if self.wildcard {
            vec![
                spec(format!("{base}/{{*rest}}"), true),
                spec(format!("{base}/"), false),
                spec(base, false),
            ]
        } else if self.segments.is_empty() {
            vec![spec(format!("{base}/"), true), spec(base, false)]
        } else {
            vec![spec(base, true)]
        }
    }
}

fn check_param_name(text: &str, name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "in {text:?}, parameter {{{name}}} needs a name of letters, digits and '_'"
        ))
    }
}

fn check_literal(text: &str, part: &str) -> Result<(), String> {
    if part.is_empty() {
        return Err(format!(
            "path template {text:?} has an empty segment (\"//\" or a trailing '/')"
        ));
    }
    if part == "." || part == ".." {
        return Err(format!("path template {text:?} has a {part:?} segment"));
    }
    if part.contains(';') {
        return Err(format!(
            "in {text:?}, a ';' can never match: the gateway refuses (or, with paths.matrix_parameters: strip, removes) ';' parameters in request paths"
        ));
    }
    if part.ends_with('.') {
        return Err(format!(
            "in {text:?}, a segment ending in '.' can never match: the gateway refuses such request paths"
        ));
    }
    match part.chars().find(|c| !is_path_char(*c)) {
        None => Ok(()),
        Some('{' | '}') => Err(format!(
            "in {text:?}, a parameter must be a whole segment like /{{id}}; {HINT}"
        )),
        Some('*') => Err(format!(
            "in {text:?}, '*' must be a whole last segment like /pets/*; {HINT}"
        )),
        Some(c) => Err(format!(
            "path template {text:?} contains {c:?}, which is not allowed in a URL path"
        )),
    }
}

/// RFC 3986 `pchar` (unreserved, sub-delims, ':', '@', and '%' of an escape).
pub fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~!$&'()+,;=:@%".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routes(t: &str) -> Vec<(String, bool)> {
        Template::parse(t)
            .map(|t| t.routes("/c/v1"))
            .unwrap_or_default()
            .into_iter()
            .map(|r| (r.route, r.explicit))
            .collect()
    }

    #[test]
    fn templates_become_routes() {
        assert_eq!(routes("/pets"), [("/c/v1/pets".into(), true)]);
        assert_eq!(
            routes("/pets/{id}/photos/{photo}"),
            [("/c/v1/pets/{p0}/photos/{p1}".into(), true)]
        );
        assert_eq!(
            routes("/*"),
            [
                ("/c/v1/{*rest}".into(), true),
                ("/c/v1/".into(), false),
                ("/c/v1".into(), false)
            ]
        );
        assert_eq!(
            routes("/"),
            [("/c/v1/".into(), true), ("/c/v1".into(), false)]
        );
        assert_eq!(routes("/pets/*").len(), 3);
    }

    #[test]
    fn bad_templates_say_why() {
        let e = |t: &str| Template::parse(t).err().unwrap_or_default();
        assert!(e("pets").contains("must start with '/'"));
        assert!(e("/pets//x").contains("empty segment"));
        assert!(e("/pets/").contains("empty segment"));
        assert!(e("/*/x").contains("last segment"));
        assert!(e("/p*").contains("whole last segment"));
        assert!(e("/{id}/{id}").contains("twice"));
        assert!(e("/{}").contains("needs a name"));
        assert!(e("/{1x}").contains("needs a name"));
        assert!(e("/a{id}").contains("whole segment"));
        assert!(e("/a b").contains("not allowed"));
        assert!(e("/a?b").contains("not allowed"));
        assert!(e("/../x").contains("\"..\""));
        assert!(e("/admin;x").contains("never match"));
        assert!(e("/admin./x").contains("never match"));
    }
}
