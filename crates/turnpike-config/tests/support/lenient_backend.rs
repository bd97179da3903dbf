//! A model of the most lenient back end the gateway must protect: how a servlet
//! container (Tomcat, Jetty, Spring: `;` parameters stripped), IIS and Windows (trailing
//! dots and spaces dropped, letters in any case), a double-decoding framework (`%252f` is
//! `/`), a lenient UTF-8 decoder (overlong `%C0%AF` is `/`) and an NFKC normaliser
//! (fullwidth `ａ` is `a`) would read a request path. Shared by the property test of the
//! normaliser (`tests/path_props.rs`) and the servlet-like back end of the end-to-end
//! test (`crates/turnpike/tests/path_e2e.rs`).

/// The path the lenient back end serves for `raw` (the path of the request line):
/// segments without parameters, decoded twice, trimmed, dot segments resolved, and in
/// lower case when `fold_case`.
pub fn lenient_view(raw: &str, fold_case: bool) -> String {
    let mut out: Vec<String> = Vec::new();
    for seg in raw.split('/') {
        let name = seg.split(';').next().unwrap_or("");
        let once = decode(name.as_bytes());
        let twice = decode(&once);
        let text = nfkc_ish(&String::from_utf8_lossy(&overlong(&twice)));
        // Decoding may have made separators: each piece is a segment of its own.
        for piece in text.split(['/', '\\']) {
            // Some frameworks strip parameters after decoding (`%3B` is `;` to them).
            let piece = piece.split(';').next().unwrap_or("");
            let trimmed = piece
                .trim_end_matches(['.', ' ', '\t'])
                .trim_start_matches(' ');
            match piece {
                "" | "." => {}
                ".." => {
                    out.pop();
                }
                _ if trimmed.is_empty() => {}
                _ if fold_case => out.push(iis_upper(trimmed).to_lowercase()),
                _ => out.push(trimmed.to_owned()),
            }
        }
    }
    format!("/{}", out.join("/"))
}

/// Whether the lenient back end would serve `raw` from its `/{base}/admin` area.
pub fn is_admin(raw: &str, base: &str, fold_case: bool) -> bool {
    let view = lenient_view(raw, fold_case);
    let admin = format!("/{base}/admin");
    view == admin || view.starts_with(&format!("{admin}/"))
}

fn decode(b: &[u8]) -> Vec<u8> {
    let hex = |c: u8| (c as char).to_digit(16);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let esc = (b[i] == b'%')
            .then(|| Some((hex(*b.get(i + 1)?)?, hex(*b.get(i + 2)?)?)))
            .flatten();
        match esc {
            Some((hi, lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    out
}

/// Overlong encodings of `/` and `.` read as what they encode.
fn overlong(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match &b[i..] {
            [0xC0, 0xAF, ..] => (out.push(b'/'), i += 2),
            [0xC0, 0xAE, ..] => (out.push(b'.'), i += 2),
            [0xE0, 0x80, 0xAF, ..] => (out.push(b'/'), i += 3),
            [0xE0, 0x80, 0xAE, ..] => (out.push(b'.'), i += 3),
            _ => (out.push(b[i]), i += 1),
        };
    }
    out
}

/// What NFKC (or a best-fit mapping) makes of fullwidth forms and dot/slash look-alikes.
fn nfkc_ish(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
            '\u{2215}' => '/',
            '\u{2024}' | '\u{fe52}' => '.',
            c => c,
        })
        .collect()
}

/// Letters a case-insensitive Windows back end matches to ASCII ones.
fn iis_upper(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{131}' => 'I',
            '\u{17f}' => 'S',
            '\u{212a}' => 'K',
            c => c,
        })
        .collect()
}
