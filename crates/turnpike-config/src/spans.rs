//! Where each node of a YAML document starts, by its path (`apis[1].endpoints[0]`),
//! so that problems found after deserialising can still name a line and column.
//! serde_yaml does not expose positions, so this walks saphyr's spanned event stream
//! of the same text. Best effort: a node it cannot place falls back to its parent.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, Span};

use crate::error::Location;

/// Start positions of the nodes of the first document.
#[derive(Debug, Default)]
pub(crate) struct Spans {
    starts: HashMap<String, Location>,
}

enum Frame {
    Seq { path: String, next: usize },
    Map { path: String, key: Option<String> },
}

impl Spans {
    pub(crate) fn scan(text: &str) -> Spans {
        let mut walker = Walker::default();
        for event in Parser::new_from_str(text) {
            let Ok((event, span)) = event else { break };
            if !walker.on_event(event, span) {
                break;
            }
        }
        Spans {
            starts: walker.starts,
        }
    }

    /// The position of `path`, or of its nearest ancestor that has one.
    pub(crate) fn find(&self, path: &str) -> Option<Location> {
        let mut path = path;
        loop {
            if let Some(at) = self.starts.get(path) {
                return Some(*at);
            }
            if path.is_empty() {
                return None;
            }
            path = parent(path);
        }
    }
}

fn parent(path: &str) -> &str {
    match path.rfind(['.', '[']) {
        Some(i) => &path[..i],
        None => "",
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Leaf,
    Seq,
    Map,
}

#[derive(Default)]
struct Walker {
    stack: Vec<Frame>,
    starts: HashMap<String, Location>,
}

impl Walker {
    /// Returns false once the first document is complete.
    fn on_event(&mut self, event: Event<'_>, span: Span) -> bool {
        match event {
            Event::Scalar(value, ..) => self.node(Some(&value), Kind::Leaf, span),
            Event::Alias(_) => self.node(None, Kind::Leaf, span),
            Event::SequenceStart(..) => self.node(None, Kind::Seq, span),
            Event::MappingStart(..) => self.node(None, Kind::Map, span),
            Event::SequenceEnd | Event::MappingEnd => {
                self.stack.pop();
            }
            Event::DocumentEnd => return false,
            _ => {}
        }
        true
    }

    /// Records a node; containers get a new frame pushed.
    fn node(&mut self, scalar: Option<&str>, kind: Kind, span: Span) {
        let path = match self.stack.last_mut() {
            None => String::new(),
            Some(Frame::Seq { path, next }) => {
                let p = format!("{path}[{next}]");
                *next += 1;
                p
            }
            Some(Frame::Map { path, key }) => match key.take() {
                Some(k) if path.is_empty() => k,
                Some(k) => format!("{path}.{k}"),
                None => {
                    // This node is a key: remember it, the value comes next.
                    *key = Some(scalar.unwrap_or("?").to_owned());
                    self.push(kind, "?".to_owned());
                    return;
                }
            },
        };
        let at = Location {
            line: span.start.line(),
            column: span.start.col() + 1,
        };
        self.starts.entry(path.clone()).or_insert(at);
        self.push(kind, path);
    }

    fn push(&mut self, kind: Kind, path: String) {
        match kind {
            Kind::Leaf => {}
            Kind::Seq => self.stack.push(Frame::Seq { path, next: 0 }),
            Kind::Map => self.stack.push(Frame::Map { path, key: None }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_nodes_and_falls_back_to_parents() {
        let text = "apis:\n  - name: a\n    endpoints: [\"x\", \"y\"]\n";
        let s = Spans::scan(text);
        assert_eq!(
            s.find("apis[0].name"),
            Some(Location {
                line: 2,
                column: 11
            })
        );
        assert_eq!(
            s.find("apis[0].endpoints[1]"),
            Some(Location {
                line: 3,
                column: 22
            })
        );
        // Missing leaf: the nearest ancestor.
        assert_eq!(
            s.find("apis[0].version"),
            Some(Location { line: 2, column: 5 })
        );
    }

    #[test]
    fn complex_keys_do_not_confuse_the_walk() {
        let text = "? [a, b]\n: 1\nc: 2\n";
        let s = Spans::scan(text);
        assert_eq!(s.find("c"), Some(Location { line: 3, column: 4 }));
    }
}
