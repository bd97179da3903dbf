//! Fuzzing the one XML reader (bench/fuzz.sh raises the case count with
//! TURNPIKE_FUZZ_CASES): on any input and under any caps it never panics, its three
//! entry points (the check, the tree, the DOM) agree on what they accept, a document
//! accepted under small caps is accepted under larger ones, and duplicate attributes
//! are found exactly, whichever path (linear look or sort) the count takes.

use proptest::prelude::*;
use turnpike_xml::{dom, scan::Nothing, Limits, Tree, XmlError};

fn cases() -> u32 {
    std::env::var("TURNPIKE_FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(2000)
}

const PIECES: &[&str] = &[
    "<a>",
    "</a>",
    "<b/>",
    "<b x='1'/>",
    "<b x='1' y='2' z='3'>",
    "</b>",
    "<p:e xmlns:p='urn:p'>",
    "</p:e>",
    "<e xmlns='urn:d'>",
    "</e>",
    "<b xmlns:q='urn:q' xmlns:r='urn:q' q:x='1' r:x='2'/>",
    "<b xmlns:q='urn:q' q:x='1' x='2'/>",
    "<q:b/>",
    "text",
    "&amp;",
    "&#65;",
    "&bad;",
    "<",
    "]]>",
    "<!--c-->",
    "<![CDATA[x]]>",
    "<?pi x?>",
    "<!DOCTYPE a>",
    "<b x='1' x='2'/>",
    "<b a0='' a1='' a2='' a3='' a4='' a5='' a6='' a7='' a8='' a9=''/>",
    "<b a0='' a1='' a2='' a3='' a4='' a5='' a6='' a7='' a8='' a0=''/>",
    "<longname_______________________/>",
    "\r\n",
    "<b x='a\tb'/>",
];

fn small() -> Limits {
    Limits {
        max_bytes: 4096,
        max_nodes: 40,
        max_depth: 6,
        max_attributes: 6,
        max_name_len: 16,
        max_namespaces: 2,
        max_value_len: 8,
        max_text_len: 8,
    }
}

fn verdicts(text: &str, limits: Limits) -> [Result<(), XmlError>; 3] {
    [
        turnpike_xml::check(text, limits, &mut Nothing),
        Tree::parse(text, limits).map(drop),
        dom::parse(text, limits).map(drop),
    ]
}

fn agree(text: &str) {
    for limits in [small(), Limits::MESSAGES] {
        let [c, t, d] = verdicts(text, limits);
        assert_eq!(c, t, "{text:?}");
        // roxmltree is looser in one place (a reference to a surrogate), never stricter
        // than the pass it runs after.
        if c.is_err() {
            assert!(d.is_err(), "{text:?}");
        }
    }
    if turnpike_xml::check(text, small(), &mut Nothing).is_ok() {
        assert!(turnpike_xml::check(text, Limits::MESSAGES, &mut Nothing).is_ok());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..200)) {
        let text = String::from_utf8_lossy(&b);
        agree(&text);
    }

    #[test]
    fn documents_of_pieces(ix in prop::collection::vec(0usize..PIECES.len(), 0..20)) {
        let text: String = ix.iter().map(|&i| PIECES[i]).collect();
        agree(&text);
        agree(&format!("<r xmlns:q='urn:q'>{text}</r>"));
    }

    #[test]
    fn duplicates_are_found_exactly(names in prop::collection::vec(0u8..40, 1..60)) {
        let mut s = String::from("<a xmlns:p='urn:p' xmlns:q='urn:p'");
        let mut seen = std::collections::HashSet::new();
        let mut dup = false;
        for n in &names {
            // Half the names are prefixed: p:k and q:k are the same attribute.
            let (written, expanded) = if n % 2 == 0 {
                let p = if n % 4 == 0 { "p" } else { "q" };
                (format!("{p}:k{}", n / 4), format!("urn:p k{}", n / 4))
            } else {
                (format!("k{n}"), format!("k{n}"))
            };
            dup |= !seen.insert(expanded);
            s.push_str(&format!(" {written}='v'"));
        }
        s.push_str("/>");
        let got = turnpike_xml::check(&s, Limits::MESSAGES, &mut Nothing);
        prop_assert_eq!(got.is_err(), dup, "{}", s);
    }
}
