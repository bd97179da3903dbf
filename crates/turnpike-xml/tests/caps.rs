//! The reader's caps: each count that grows with the input is refused one past its cap,
//! with its own error, and the documents at the caps are read. The attribute bomb of
//! issue 25 (one element with 64,000 attributes, 693 KB) is refused at the 257th
//! attribute instead of costing seconds of quadratic duplicate checks.

use turnpike_xml::{dom, scan::Nothing, Limits, Tree, XmlError};

fn check(text: &str, limits: Limits) -> Result<(), XmlError> {
    turnpike_xml::check(text, limits, &mut Nothing)
}

fn element_with_attrs(n: usize) -> String {
    let mut s = String::from("<a");
    for i in 0..n {
        s.push_str(&format!(" a{i}=\"{i}\""));
    }
    s.push_str("/>");
    s
}

#[test]
fn the_attribute_bomb_is_refused_by_every_entry_point() {
    let bomb = element_with_attrs(64_000);
    assert!(bomb.len() > 690_000, "the issue's size: {}", bomb.len());
    let want = XmlError::TooManyAttributes { limit: 256 };
    assert_eq!(check(&bomb, Limits::MESSAGES).err(), Some(want.clone()));
    assert_eq!(
        Tree::parse(&bomb, Limits::MESSAGES).err(),
        Some(want.clone())
    );
    assert_eq!(dom::parse(&bomb, Limits::MESSAGES).err(), Some(want));
    assert!(check(&bomb, Limits::DEFINITIONS).is_err());
}

#[test]
fn attributes_per_element_are_capped_at_the_limit() {
    assert!(check(&element_with_attrs(256), Limits::MESSAGES).is_ok());
    assert_eq!(
        check(&element_with_attrs(257), Limits::MESSAGES),
        Err(XmlError::TooManyAttributes { limit: 256 })
    );
    // The count is per element: many elements of 256 each are fine.
    let many = format!("<r>{}</r>", element_with_attrs(256).repeat(20));
    assert!(Tree::parse(&many, Limits::MESSAGES).is_ok());
}

#[test]
fn duplicate_attributes_are_still_refused_past_the_linear_look() {
    // Nine or more attributes take the sorting path.
    for n in [2usize, 8, 9, 200, 255] {
        let mut s = element_with_attrs(n);
        s.insert_str(2, " a0=\"again\"");
        assert_eq!(
            check(&s, Limits::MESSAGES),
            Err(XmlError::Malformed("a duplicate attribute".into())),
            "{n} attributes"
        );
    }
    // Two prefixes bound to one URI name the same attribute.
    let mut s = String::from("<a xmlns:p='urn:x' xmlns:q='urn:x'");
    for i in 0..20 {
        s.push_str(&format!(" p:b{i}='1'"));
    }
    s.push_str(" q:b7='2'/>");
    assert_eq!(
        check(&s, Limits::MESSAGES),
        Err(XmlError::Malformed("a duplicate attribute".into()))
    );
    // The same local name in different namespaces is two attributes.
    let ok = "<a xmlns:p='urn:p' xmlns:q='urn:q' p:b='1' q:b='2' b='3'/>";
    assert!(check(ok, Limits::MESSAGES).is_ok());
}

#[test]
fn names_namespaces_values_and_text_are_capped() {
    let l = Limits::MESSAGES;
    let long = "n".repeat(l.max_name_len + 1);
    let cap = XmlError::NameTooLong {
        limit: l.max_name_len,
    };
    assert_eq!(check(&format!("<{long}/>"), l), Err(cap.clone()));
    assert_eq!(check(&format!("<a {long}='1'/>"), l), Err(cap.clone()));
    assert_eq!(check(&format!("<a><?{long} x?></a>"), l), Err(cap));
    let at_cap = "n".repeat(l.max_name_len);
    assert!(check(&format!("<{at_cap}/>"), l).is_ok());

    let decls: String = (0..=l.max_namespaces)
        .map(|i| format!(" xmlns:p{i}='urn:{i}'"))
        .collect();
    assert_eq!(
        check(&format!("<a{decls}/>"), l),
        Err(XmlError::TooManyNamespaces {
            limit: l.max_namespaces
        })
    );

    let value = "v".repeat(l.max_value_len + 1);
    let cap = XmlError::ValueTooLarge {
        limit: l.max_value_len,
    };
    assert_eq!(check(&format!("<a b='{value}'/>"), l), Err(cap.clone()));
    assert_eq!(check(&format!("<a xmlns='{value}'/>"), l), Err(cap));
    // References do not hide a long value.
    let refs = "&amp;".repeat(l.max_value_len / 5 + 1);
    assert!(check(&format!("<a b='{refs}'/>"), l).is_err());

    let small = Limits {
        max_text_len: 10,
        ..l
    };
    assert!(check("<a>0123456789</a>", small).is_ok());
    let cap = XmlError::TextTooLarge { limit: 10 };
    assert_eq!(check("<a>0123456789x</a>", small), Err(cap.clone()));
    assert_eq!(check("<a><![CDATA[0123456789x]]></a>", small), Err(cap));
}

#[test]
fn depth_nodes_size_and_dtds_as_before() {
    let l = Limits::MESSAGES;
    let deep = "<a>".repeat(200) + &"</a>".repeat(200);
    assert_eq!(check(&deep, l), Err(XmlError::TooDeep { limit: 128 }));
    // The DOM is built only after the pass: roxmltree never sees the deep document.
    assert_eq!(
        dom::parse(&deep, l).err(),
        Some(XmlError::TooDeep { limit: 128 })
    );
    let few = Limits { max_nodes: 3, ..l };
    assert_eq!(
        check("<a><b/><c/><d/></a>", few),
        Err(XmlError::TooManyNodes { limit: 3 })
    );
    let tiny = Limits { max_bytes: 10, ..l };
    assert_eq!(
        check("<a><b/><c/><d/></a>", tiny),
        Err(XmlError::TooLarge { limit: 10 })
    );
    let laughs = r#"<!DOCTYPE l [<!ENTITY a "aa"><!ENTITY b "&a;&a;">]><l>&b;</l>"#;
    assert_eq!(check(laughs, l), Err(XmlError::Dtd));
    assert!(XmlError::TooManyAttributes { limit: 1 }.is_over_limit());
    assert!(!XmlError::Dtd.is_over_limit());
}

#[test]
fn prefixes_resolve_through_many_scopes() {
    // Declarations on every level; the innermost binding of a prefix wins and the outer
    // one comes back when the inner element ends.
    let mut s = String::new();
    for i in 0..60 {
        s.push_str(&format!("<e{i} xmlns:p='urn:{i}' xmlns:q{i}='urn:q'>"));
    }
    s.push_str("<p:x q0:a='1' q59:b='2'/>");
    for i in (0..60).rev() {
        s.push_str(&format!("</e{i}>"));
    }
    let t = Tree::parse(&s, Limits::MESSAGES).expect("reads");
    let mut n = t.root();
    for _ in 0..59 {
        n = n.elements().next().expect("child");
    }
    let x = n.elements().next().expect("x");
    assert_eq!(x.namespace(), Some("urn:59"));
    assert_eq!(x.attribute(Some("urn:q"), "a"), Some("1"));
    // q0 and q59 are both urn:q: a:1 and b:2 are different local names, so no clash.
    let clash = s.replace("q59:b='2'", "q59:a='2'");
    assert_eq!(
        check(&clash, Limits::MESSAGES),
        Err(XmlError::Malformed("a duplicate attribute".into()))
    );
    let after = "<r xmlns:p='urn:outer'><i xmlns:p='urn:inner'/><p:o/></r>";
    let t = Tree::parse(after, Limits::MESSAGES).expect("reads");
    let o = t.root().elements().nth(1).expect("o");
    assert_eq!(o.namespace(), Some("urn:outer"));
    assert!(check("<r><i xmlns:p='urn:i'/><p:o/></r>", Limits::MESSAGES).is_err());
}

#[test]
fn the_tree_keeps_prefixes_and_declarations() {
    let text = "<s:E xmlns:s='urn:s' xmlns:t='urn:t'><s:B xmlns:s='urn:s' xmlns:u='urn:u' t:id='1' plain='x'/></s:E>";
    let t = Tree::parse(text, Limits::MESSAGES).expect("reads");
    let root = t.root();
    assert_eq!((root.prefix(), root.name()), (Some("s"), "E"));
    let b = root.elements().next().expect("B");
    let decls: Vec<_> = b
        .declarations()
        .iter()
        .map(|d| (d.prefix, d.uri.to_string(), d.repeats_parent))
        .collect();
    assert_eq!(
        decls,
        [
            (Some("s"), "urn:s".to_owned(), true),
            (Some("u"), "urn:u".to_owned(), false)
        ]
    );
    let attrs: Vec<_> = b
        .attributes()
        .iter()
        .map(|a| (a.prefix, a.local, a.ns.as_deref().map(str::to_owned)))
        .collect();
    assert_eq!(
        attrs,
        [
            (Some("t"), "id", Some("urn:t".to_owned())),
            (None, "plain", None)
        ]
    );
}
