//! The reader's cost on the most expensive documents its caps let through, per MiB,
//! for the check alone, the tree, and the DOM (bench/RESULTS.md, issue 25):
//!
//!     cargo run --release -p turnpike-xml --example worst_case
//!
//! Each document fills 1 MiB with one hostile shape at its cap; the figure that matters
//! is the time per MiB staying flat from shape to shape (linear work), and the bomb's
//! refusal time.

use std::time::Instant;

use turnpike_xml::{dom, scan::Nothing, Limits, Tree};

const MIB: usize = 1 << 20;

fn fill(open: &str, one: &str, close: &str) -> String {
    let mut s = String::from(open);
    while s.len() + one.len() + close.len() < MIB {
        s.push_str(one);
    }
    s.push_str(close);
    s
}

fn attrs(n: usize, name: impl Fn(usize) -> String) -> String {
    (0..n).map(|i| format!(" {}=\"\"", name(i))).collect()
}

fn time(what: &str, doc: &str, l: Limits) {
    let runs = 5;
    let mut best = [f64::MAX; 3];
    let mut ok = [false; 3];
    for _ in 0..runs {
        let t = Instant::now();
        ok[0] = turnpike_xml::check(doc, l, &mut Nothing).is_ok();
        best[0] = best[0].min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        ok[1] = Tree::parse(doc, l).is_ok();
        best[1] = best[1].min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        ok[2] = dom::parse(doc, l).is_ok();
        best[2] = best[2].min(t.elapsed().as_secs_f64());
    }
    let per_mib = |s: f64| s * 1e3 * MIB as f64 / doc.len() as f64;
    println!(
        "| {what} | {:.0} KiB | {:.2} ms | {:.2} ms | {:.2} ms | {} |",
        doc.len() as f64 / 1024.0,
        per_mib(best[0]),
        per_mib(best[1]),
        per_mib(best[2]),
        if ok.iter().all(|o| *o) {
            "read"
        } else {
            "refused"
        }
    );
}

fn main() {
    let l = Limits::MESSAGES;
    println!("| document (1 MiB) | size | check / MiB | tree / MiB | DOM / MiB | verdict |");
    println!("|---|---|---|---|---|---|");
    let plain = fill("<r>", "<i>some text of an element</i>", "</r>");
    time("plain elements with text", &plain, l);
    let wide = format!("<i{}/>", attrs(256, |i| format!("a{i}")));
    time("256 attributes per element", &fill("<r>", &wide, "</r>"), l);
    let decls: String = (0..64).map(|i| format!(" xmlns:p{i}='urn:{i}'")).collect();
    let prefixed = format!("<i{}/>", attrs(256, |i| format!("p{}:a{i}", i % 64)));
    time(
        "256 prefixed attributes, 64 prefixes in scope",
        &fill(&format!("<r{decls}>"), &prefixed, "</r>"),
        l,
    );
    let mut deep = String::new();
    for d in 0..127 {
        deep.push_str(&format!("<d{d}{decls}>"));
    }
    let close: String = (0..127).rev().map(|d| format!("</d{d}>")).collect();
    time(
        "127 levels x 64 declarations, then prefixed attributes",
        &fill(&deep, &prefixed, &close),
        l,
    );
    let long = "n".repeat(500);
    let long_names = format!("<i{}/>", attrs(256, |i| format!("{long}{i:03}")));
    time(
        "256 attributes with 503-byte names",
        &fill("<r>", &long_names, "</r>"),
        l,
    );
    time(
        "references in text",
        &fill("<r>", "&amp;&#x41;&lt;", "</r>"),
        l,
    );
    let bomb = format!("<a{}/>", attrs(64_000, |i| format!("a{i}")));
    let t = Instant::now();
    let refused = turnpike_xml::check(&bomb, l, &mut Nothing).is_err();
    println!(
        "\nthe 64,000-attribute bomb ({} KB): refused={refused} in {:.3} ms",
        bomb.len() / 1000,
        t.elapsed().as_secs_f64() * 1e3
    );
}
