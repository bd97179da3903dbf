//! Differential fuzz target of the fast parser against apollo-compiler's parser: for
//! any text the fast parser accepts, apollo-compiler accepts it too and builds the same
//! AST (values, and the byte span of every node and name); the fast parser never
//! accepts a text apollo-compiler rejects. Inputs: generated executable documents (with
//! random ignored tokens, comments, escapes, numbers), the same with one byte deleted,
//! inserted or replaced, token soup, and arbitrary text. bench/fuzz.sh raises the case
//! count with TURNPIKE_FUZZ_CASES.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use apollo_compiler::ast::{Definition, Directive, Document, Selection, Type, Value};
use apollo_compiler::parser::Parser;
use apollo_compiler::{Name, Node};
use proptest::prelude::*;

use crate::caps::Caps;
use crate::fastparse::{parse, Declined};

/// Spans of every node and name, in document order, as `start..end`.
#[derive(Default)]
struct Spans(Vec<String>);

impl Spans {
    fn at<T>(&mut self, what: &str, n: &Node<T>) {
        let l = n.location().map(|l| (l.offset(), l.end_offset()));
        self.0.push(format!("{what} {l:?}"));
    }

    fn name(&mut self, n: &Name) {
        let l = n.location().map(|l| (l.offset(), l.end_offset()));
        self.0.push(format!("name {n} {l:?}"));
    }

    fn doc(&mut self, d: &Document) {
        for def in &d.definitions {
            match def {
                Definition::OperationDefinition(op) => {
                    self.at("op", op);
                    op.name.iter().for_each(|n| self.name(n));
                    for v in &op.variables {
                        self.at("var", v);
                        self.name(&v.name);
                        self.at("type", &v.ty);
                        self.ty(&v.ty);
                        v.default_value.iter().for_each(|d| self.value(d));
                        self.directives(&v.directives);
                    }
                    self.directives(&op.directives);
                    self.set(&op.selection_set);
                }
                Definition::FragmentDefinition(f) => {
                    self.at("fragment", f);
                    self.name(&f.name);
                    self.name(&f.type_condition);
                    self.directives(&f.directives);
                    self.set(&f.selection_set);
                }
                _ => self.0.push("other definition".into()),
            }
        }
    }

    fn ty(&mut self, t: &Type) {
        match t {
            Type::Named(n) | Type::NonNullNamed(n) => self.name(n),
            Type::List(i) | Type::NonNullList(i) => self.ty(i),
        }
    }

    fn directives(&mut self, list: &[Node<Directive>]) {
        for d in list {
            self.at("directive", d);
            self.name(&d.name);
            for a in &d.arguments {
                self.at("argument", a);
                self.name(&a.name);
                self.value(&a.value);
            }
        }
    }

    fn value(&mut self, v: &Node<Value>) {
        self.at("value", v);
        match &**v {
            Value::Enum(n) | Value::Variable(n) => self.name(n),
            Value::List(items) => items.iter().for_each(|i| self.value(i)),
            Value::Object(fields) => {
                for (n, v) in fields {
                    self.name(n);
                    self.value(v);
                }
            }
            _ => {}
        }
    }

    fn set(&mut self, set: &[Selection]) {
        for s in set {
            match s {
                Selection::Field(f) => {
                    self.at("field", f);
                    f.alias.iter().for_each(|n| self.name(n));
                    self.name(&f.name);
                    for a in &f.arguments {
                        self.at("argument", a);
                        self.name(&a.name);
                        self.value(&a.value);
                    }
                    self.directives(&f.directives);
                    self.set(&f.selection_set);
                }
                Selection::FragmentSpread(s) => {
                    self.at("spread", s);
                    self.name(&s.fragment_name);
                    self.directives(&s.directives);
                }
                Selection::InlineFragment(i) => {
                    self.at("inline", i);
                    i.type_condition.iter().for_each(|n| self.name(n));
                    self.directives(&i.directives);
                    self.set(&i.selection_set);
                }
            }
        }
    }
}

fn spans_of(d: &Document) -> Vec<String> {
    let mut s = Spans::default();
    s.doc(d);
    s.0
}

/// The property: whatever the fast parser accepts, apollo-compiler accepts as the
/// same document. Returns whether the fast parser accepted.
pub(crate) fn agree(src: &str, caps: &Caps) -> bool {
    let fast = parse(src, caps.max_tokens, caps.max_nesting);
    let apollo = Parser::new()
        .token_limit(caps.max_tokens)
        .recursion_limit(caps.max_nesting)
        .parse_ast(src, "q.graphql");
    match (fast, apollo) {
        (Ok(f), Ok(a)) => {
            assert_eq!(f.definitions, a.definitions, "AST differs for {src:?}");
            assert_eq!(spans_of(&f), spans_of(&a), "spans differ for {src:?}");
            true
        }
        (Ok(_), Err(e)) => panic!("fast parser accepted {src:?}, apollo-compiler: {e}"),
        (Err(_), _) => false,
    }
}

/// A small deterministic generator (xorshift) of executable documents.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }

    fn ws(&mut self, out: &mut String) {
        let w = self.pick(&[
            " ",
            "",
            "\n",
            "  ",
            ",",
            "\t",
            " # note\n",
            "\r\n",
            ", ",
            "\n    ",
            "#x\r",
        ]);
        out.push_str(w);
    }

    fn sep(&mut self, out: &mut String) {
        let w = self.pick(&[" ", "\n", ",", "\t", " # c\n", "\r\n  "]);
        out.push_str(w);
    }

    fn name(&mut self) -> &'static str {
        self.pick(&[
            "a",
            "id",
            "name",
            "hero",
            "friends",
            "on",
            "query",
            "true",
            "null",
            "_x1",
            "B",
            "fragment",
            "Human",
            "first",
            "__typename",
        ])
    }

    fn value(&mut self, out: &mut String, depth: u32, constant: bool) {
        let choice = self.next() % if depth > 2 { 6 } else { 8 };
        match choice {
            0 => out.push_str(self.pick(&["0", "-1", "42", "-0", "1234567890123"])),
            1 => out.push_str(self.pick(&["1.5", "-0.0", "1e3", "2E-4", "3.25e+2", "0.1"])),
            2 => out.push_str(self.pick(&[
                "\"\"",
                "\"x y\"",
                "\"a\\\"b\"",
                "\"\\\\\\/\\b\\f\\n\\r\\t\"",
                "\"\\u00e9\\u0041\"",
                "\"caf\u{e9} \u{1F600}\"",
                "\"tab\there\"",
            ])),
            3 => out.push_str(self.pick(&["true", "false", "null", "RED", "on"])),
            4 if !constant => {
                out.push('$');
                out.push_str(self.name());
            }
            6 => {
                out.push('[');
                for i in 0..self.next() % 3 {
                    if i > 0 {
                        self.sep(out);
                    }
                    self.value(out, depth + 1, constant);
                }
                out.push(']');
            }
            7 => {
                out.push('{');
                for i in 0..self.next() % 3 {
                    if i > 0 {
                        self.sep(out);
                    }
                    out.push_str(self.name());
                    out.push(':');
                    self.ws(out);
                    self.value(out, depth + 1, constant);
                }
                out.push('}');
            }
            _ => out.push('7'),
        }
    }

    fn arguments(&mut self, out: &mut String, constant: bool) {
        if !self.one_in(3) {
            return;
        }
        out.push('(');
        for i in 0..1 + self.next() % 3 {
            if i > 0 {
                self.sep(out);
            }
            out.push_str(self.name());
            self.ws(out);
            out.push(':');
            self.ws(out);
            self.value(out, 0, constant);
        }
        out.push(')');
    }

    fn directives(&mut self, out: &mut String, constant: bool) {
        while self.one_in(4) {
            self.ws(out);
            out.push('@');
            out.push_str(self.pick(&["skip", "include", "cost", "x"]));
            self.arguments(out, constant);
        }
    }

    fn selection_set(&mut self, out: &mut String, depth: u32) {
        out.push('{');
        self.ws(out);
        for i in 0..1 + self.next() % 4 {
            if i > 0 {
                self.sep(out);
            }
            match self.next() % 6 {
                0 => {
                    out.push_str("...");
                    self.ws(out);
                    out.push_str(self.pick(&["F", "G", "Frag"]));
                    self.directives(out, false);
                }
                1 if depth < 4 => {
                    out.push_str("...");
                    if self.one_in(2) {
                        self.ws(out);
                        out.push_str("on ");
                        out.push_str(self.pick(&["Human", "Droid"]));
                    }
                    self.directives(out, false);
                    self.ws(out);
                    self.selection_set(out, depth + 1);
                }
                _ => {
                    if self.one_in(4) {
                        out.push_str(self.name());
                        self.ws(out);
                        out.push(':');
                        self.ws(out);
                    }
                    out.push_str(self.name());
                    self.arguments(out, false);
                    self.directives(out, false);
                    if depth < 4 && self.one_in(3) {
                        self.ws(out);
                        self.selection_set(out, depth + 1);
                    }
                }
            }
        }
        self.ws(out);
        out.push('}');
    }

    fn type_ref(&mut self, out: &mut String, depth: u32) {
        if depth < 2 && self.one_in(3) {
            out.push('[');
            self.type_ref(out, depth + 1);
            out.push(']');
        } else {
            out.push_str(self.pick(&["Int", "String", "ID", "Episode"]));
        }
        if self.one_in(2) {
            out.push('!');
        }
    }

    fn document(&mut self) -> String {
        let mut out = String::new();
        self.ws(&mut out);
        for i in 0..1 + self.next() % 3 {
            if i > 0 {
                self.sep(&mut out);
            }
            match self.next() % 4 {
                0 => self.selection_set(&mut out, 0),
                1 => {
                    out.push_str("fragment ");
                    out.push_str(self.pick(&["F", "G", "Frag"]));
                    out.push_str(" on ");
                    out.push_str(self.pick(&["Human", "Character"]));
                    self.directives(&mut out, false);
                    self.ws(&mut out);
                    self.selection_set(&mut out, 0);
                }
                _ => {
                    out.push_str(self.pick(&["query", "mutation", "subscription"]));
                    if self.one_in(2) {
                        out.push(' ');
                        out.push_str(self.pick(&["Q", "op_2", "query"]));
                    }
                    if self.one_in(2) {
                        self.ws(&mut out);
                        out.push('(');
                        for j in 0..1 + self.next() % 3 {
                            if j > 0 {
                                self.sep(&mut out);
                            }
                            out.push('$');
                            out.push_str(self.name());
                            out.push(':');
                            self.ws(&mut out);
                            self.type_ref(&mut out, 0);
                            if self.one_in(3) {
                                self.ws(&mut out);
                                out.push('=');
                                self.ws(&mut out);
                                self.value(&mut out, 0, true);
                            }
                            self.directives(&mut out, true);
                        }
                        out.push(')');
                    }
                    self.directives(&mut out, false);
                    self.ws(&mut out);
                    self.selection_set(&mut out, 0);
                }
            }
        }
        self.ws(&mut out);
        out
    }
}

fn generated(seed: u64) -> String {
    Gen(seed | 1).document()
}

fn token_soup() -> impl Strategy<Value = String> {
    let tokens = prop::sample::select(vec![
        "{",
        "}",
        "(",
        ")",
        "[",
        "]",
        "...",
        "..",
        "on",
        "Human",
        "hero",
        "fragment",
        "F",
        "query",
        "mutation",
        "a:",
        ":",
        "$n",
        "=",
        "!",
        "@skip",
        "5",
        "-",
        "1.",
        "0x",
        "01",
        "\"s\"",
        "\"\"\"b\"\"\"",
        "\"\\q\"",
        "\"\\u12\"",
        "\"\\uD83D\"",
        "\"",
        "#",
        "\n",
        ",",
        "type",
        "extend",
        "schema",
        "scalar",
        "\u{feff}",
        "é",
        "\t",
        "\r",
        "\0",
    ]);
    prop::collection::vec(tokens, 0..40).prop_map(|t| t.concat())
}

fn mutate(src: &str, at: usize, op: u8, byte: u8) -> String {
    let mut b = src.as_bytes().to_vec();
    let at = at % (b.len() + 1);
    let bytes = b"{}()[]:$@!=.\"\\,# \nae1-";
    let byte = bytes[byte as usize % bytes.len()];
    match op % 3 {
        0 if at < b.len() => {
            b.remove(at);
        }
        1 => b.insert(at, byte),
        _ if at < b.len() => b[at] = byte,
        _ => b.push(byte),
    }
    String::from_utf8_lossy(&b).into_owned()
}

#[test]
fn the_seed_queries_take_the_fast_path() {
    let caps = Caps::default();
    for q in [
        include_str!("../../../bench/graphql/starwars/query1.graphql"),
        include_str!("../../../bench/graphql/starwars/query2.graphql"),
        include_str!("../../../bench/graphql/starwars/query3.graphql"),
        include_str!("../../../bench/graphql/starwars/query3.oneline.graphql"),
        "query Q($n: Int = 3, $s: [String!]! @x(a: 1)) @d { hero(first: $n) { ...F name @skip(if: true) } }\nfragment F on Character { id ... on Human { height(unit: METER) } ... @include(if: false) { id } }",
        "{ a(o: {x: [1, 2.5e3, \"s\\n\\u00e9\", null, true, RED]}) }",
    ] {
        assert!(agree(q, &caps), "declined: {q}");
    }
}

#[test]
fn generated_documents_mostly_take_the_fast_path() {
    let caps = Caps::default();
    let (mut valid, mut fast) = (0, 0);
    for seed in 1..=1000u64 {
        let src = generated(seed);
        valid += usize::from(Parser::new().parse_ast(&src, "q").is_ok());
        fast += usize::from(agree(&src, &caps));
    }
    assert!(
        valid >= 200,
        "the generator makes {valid} valid documents of 1000"
    );
    assert_eq!(fast, valid, "declined documents apollo-compiler accepts");
}

#[test]
fn declines_what_it_leaves_to_apollo() {
    let caps = Caps::default();
    for q in [
        "type Query { a: Int }",
        "{ a(s: \"\"\"block\"\"\") }",
        "{ a(s: \"\\uD83D\\uDE00\") }",
        "\u{feff}{ a }",
        "",
        "{ a }}",
        "{ a(x: 01) }",
    ] {
        assert!(parse(q, caps.max_tokens, caps.max_nesting).is_err(), "{q}");
        agree(q, &caps);
    }
    let deep = format!("{}a{}", "{a".repeat(70), "}".repeat(70));
    assert_eq!(
        parse(&deep, caps.max_tokens, caps.max_nesting).err(),
        Some(Declined::NearLimit)
    );
    agree(&deep, &caps);
    let tiny = Caps {
        max_tokens: 20,
        ..Caps::default()
    };
    agree("{ a b c d e f g h i j k l m n o p }", &tiny);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("TURNPIKE_FUZZ_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(2000)
    ))]

    #[test]
    fn generated_documents_agree(seed in any::<u64>()) {
        agree(&generated(seed), &Caps::default());
    }

    #[test]
    fn mutated_documents_agree(seed in any::<u64>(), at in any::<usize>(), op in any::<u8>(), byte in any::<u8>()) {
        agree(&mutate(&generated(seed), at, op, byte), &Caps::default());
    }

    #[test]
    fn token_soup_agrees(src in token_soup()) {
        agree(&src, &Caps::default());
    }

    #[test]
    fn arbitrary_text_agrees(src in ".{0,120}") {
        agree(&src, &Caps::default());
    }

    #[test]
    fn small_caps_agree(seed in any::<u64>(), tokens in 1usize..60, nesting in 1usize..8) {
        let caps = Caps { max_tokens: tokens, max_nesting: nesting, ..Caps::default() };
        agree(&generated(seed), &caps);
    }
}
