//! Reads the text files of a zip archive (a WSDL uploaded with the files it imports, an
//! OpenAPI document with the files its `$ref`s name), bounded: at most [`MAX_ENTRIES`]
//! entries, [`MAX_TOTAL`] bytes once inflated, and no entry inflating more than
//! [`MAX_RATIO`] times its compressed size (a zip bomb stops at the first limit it
//! reaches, having inflated at most that much); stored and deflated entries only, no
//! ZIP64, no encryption. Paths are kept as written (`/`-separated), `..` segments refused.

use std::collections::BTreeMap;
use std::io::Read;

/// Most entries read from one archive.
pub const MAX_ENTRIES: usize = 1024;
/// Most bytes inflated from one archive.
pub const MAX_TOTAL: u64 = 16 << 20;
/// Most an entry may inflate per compressed byte: text compresses 3-20 times, a bomb
/// thousands of times.
pub const MAX_RATIO: u64 = 100;
/// Entries smaller than this once inflated are not held to [`MAX_RATIO`] (a tiny
/// file of repeated characters is no bomb).
const RATIO_FLOOR: u64 = 64 << 10;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The text files (`.wsdl`, `.xsd`) of the archive, by path.
pub fn unpack(zip: &[u8]) -> Result<BTreeMap<String, String>, String> {
    unpack_matching(zip, &[".wsdl", ".xsd"])
}

/// The files of the archive whose names end (ignoring case) in one of `suffixes`, by
/// path; each must be UTF-8 text.
pub fn unpack_matching(zip: &[u8], suffixes: &[&str]) -> Result<BTreeMap<String, String>, String> {
    let eocd = (0..zip.len().saturating_sub(21))
        .rev()
        .take(65_557)
        .find(|&i| u32_at(zip, i) == Some(0x0605_4b50))
        .ok_or("not a zip archive (no end of central directory)")?;
    let entries = usize::from(u16_at(zip, eocd + 10).ok_or("truncated zip")?);
    let cd_offset = u32_at(zip, eocd + 16).ok_or("truncated zip")? as usize;
    if entries == 0xFFFF || cd_offset == 0xFFFF_FFFF {
        return Err("ZIP64 archives are not supported".into());
    }
    if entries > MAX_ENTRIES {
        return Err(format!("more than {MAX_ENTRIES} entries"));
    }
    let mut out = BTreeMap::new();
    let mut budget = MAX_TOTAL;
    let mut at = cd_offset;
    for _ in 0..entries {
        if u32_at(zip, at) != Some(0x0201_4b50) {
            return Err("corrupt central directory".into());
        }
        let field = |off: usize| u16_at(zip, at + off).ok_or("truncated central directory");
        let flags = field(8)?;
        let method = field(10)?;
        let comp_size = u32_at(zip, at + 20).ok_or("truncated central directory")? as usize;
        let name_len = usize::from(field(28)?);
        let extra_len = usize::from(field(30)?);
        let comment_len = usize::from(field(32)?);
        let local = u32_at(zip, at + 42).ok_or("truncated central directory")? as usize;
        let name = zip
            .get(at + 46..at + 46 + name_len)
            .ok_or("truncated central directory")?;
        at += 46 + name_len + extra_len + comment_len;
        let name = String::from_utf8_lossy(name).replace('\\', "/");
        let lower = name.to_ascii_lowercase();
        if !suffixes.iter().any(|s| lower.ends_with(s)) {
            continue;
        }
        if name.split('/').any(|s| s == "..") || name.starts_with('/') {
            return Err(format!("{name}: paths must stay inside the archive"));
        }
        if flags & 1 != 0 {
            return Err(format!("{name}: encrypted entries are not supported"));
        }
        if u32_at(zip, local) != Some(0x0403_4b50) {
            return Err(format!("{name}: corrupt local header"));
        }
        let lname = usize::from(u16_at(zip, local + 26).ok_or("truncated local header")?);
        let lextra = usize::from(u16_at(zip, local + 28).ok_or("truncated local header")?);
        let start = local + 30 + lname + lextra;
        let data = zip
            .get(start..start.saturating_add(comp_size))
            .ok_or_else(|| format!("{name}: truncated data"))?;
        let ratio_cap = (data.len() as u64)
            .saturating_mul(MAX_RATIO)
            .max(RATIO_FLOOR);
        let bytes = inflate(&name, method, data, budget.min(ratio_cap))?;
        if bytes.len() as u64 > budget {
            return Err(format!(
                "the archive inflates to more than {MAX_TOTAL} bytes"
            ));
        }
        if bytes.len() as u64 > ratio_cap {
            return Err(format!(
                "{name}: inflates more than {MAX_RATIO} times its compressed size"
            ));
        }
        budget -= bytes.len() as u64;
        let text = String::from_utf8(bytes).map_err(|_| format!("{name}: not UTF-8 text"))?;
        out.insert(name, text);
    }
    Ok(out)
}

/// An entry's bytes, at most `cap + 1` of them (one more than allowed tells the caller
/// the entry is over its cap).
fn inflate(name: &str, method: u16, data: &[u8], cap: u64) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    let read = match method {
        0 => data.take(cap + 1).read_to_end(&mut bytes),
        8 => flate2::read::DeflateDecoder::new(data)
            .take(cap + 1)
            .read_to_end(&mut bytes),
        m => return Err(format!("{name}: compression method {m} is not supported")),
    };
    read.map_err(|e| format!("{name}: {e}"))?;
    Ok(bytes)
}

/// Writes a zip of stored (uncompressed) entries: what tests and tools use to build an
/// upload, and the DevPortal's SDK downloads. At most 65,535 entries of < 4 GiB each.
pub fn write_stored(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut cd = Vec::new();
    for (name, data) in files {
        let offset = out.len() as u32;
        let size = (data.len() as u32).to_le_bytes();
        let name_len = (name.len() as u16).to_le_bytes();
        // Unpackers (unzip, Python's zipfile) check each entry's CRC-32.
        let mut crc = flate2::Crc::new();
        crc.update(data);
        let crc = crc.sum().to_le_bytes();
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        out.extend_from_slice(&[20, 0, 0, 0, 0, 0]);
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&crc);
        out.extend_from_slice(&size);
        out.extend_from_slice(&size);
        out.extend_from_slice(&name_len);
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);
        cd.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        cd.extend_from_slice(&[20, 0, 20, 0, 0, 0, 0, 0]);
        cd.extend_from_slice(&[0; 4]);
        cd.extend_from_slice(&crc);
        cd.extend_from_slice(&size);
        cd.extend_from_slice(&size);
        cd.extend_from_slice(&name_len);
        cd.extend_from_slice(&[0; 12]);
        cd.extend_from_slice(&offset.to_le_bytes());
        cd.extend_from_slice(name.as_bytes());
    }
    let cd_offset = out.len() as u32;
    out.extend_from_slice(&cd);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(files.len() as u16).to_le_bytes());
    out.extend_from_slice(&(files.len() as u16).to_le_bytes());
    out.extend_from_slice(&(cd.len() as u32).to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A minimal archive writer for the tests (stored or deflated entries).
    pub(crate) fn build(files: &[(&str, &[u8], bool)]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut cd = Vec::new();
        for (name, data, deflate) in files {
            let body = if *deflate {
                let mut e =
                    flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(data).expect("deflate");
                e.finish().expect("deflate")
            } else {
                data.to_vec()
            };
            let method: u16 = if *deflate { 8 } else { 0 };
            let offset = out.len() as u32;
            out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
            out.extend_from_slice(&[20, 0, 0, 0]);
            out.extend_from_slice(&method.to_le_bytes());
            out.extend_from_slice(&[0; 8]);
            out.extend_from_slice(&(body.len() as u32).to_le_bytes());
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            out.extend_from_slice(&(name.len() as u16).to_le_bytes());
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&body);
            cd.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
            cd.extend_from_slice(&[20, 0, 20, 0, 0, 0]);
            cd.extend_from_slice(&method.to_le_bytes());
            cd.extend_from_slice(&[0; 8]);
            cd.extend_from_slice(&(body.len() as u32).to_le_bytes());
            cd.extend_from_slice(&(data.len() as u32).to_le_bytes());
            cd.extend_from_slice(&(name.len() as u16).to_le_bytes());
            cd.extend_from_slice(&[0; 12]);
            cd.extend_from_slice(&offset.to_le_bytes());
            cd.extend_from_slice(name.as_bytes());
        }
        let cd_offset = out.len() as u32;
        out.extend_from_slice(&cd);
        out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&(files.len() as u16).to_le_bytes());
        out.extend_from_slice(&(files.len() as u16).to_le_bytes());
        out.extend_from_slice(&(cd.len() as u32).to_le_bytes());
        out.extend_from_slice(&cd_offset.to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        out
    }

    #[test]
    fn only_the_named_suffixes_are_read() {
        let zip = write_stored(&[
            ("api/openapi.YAML", b"a: 1"),
            ("x.json", b"{}"),
            ("r.md", b"#"),
        ]);
        let files = unpack_matching(&zip, &[".yaml", ".json"]).expect("unpacks");
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            ["api/openapi.YAML", "x.json"]
        );
    }

    #[test]
    fn stored_archives_written_here_read_back() {
        let zip = write_stored(&[("a.wsdl", b"<d/>"), ("x/b.xsd", b"<s/>")]);
        let files = unpack(&zip).expect("unpacks");
        assert_eq!(files["a.wsdl"], "<d/>");
        assert_eq!(files["x/b.xsd"], "<s/>");
    }

    #[test]
    fn reads_stored_and_deflated_wsdl_and_xsd_only() {
        let zip = build(&[
            ("svc/a.wsdl", b"<definitions/>", true),
            ("svc/xsd/b.xsd", b"<schema/>", false),
            ("readme.txt", b"x", false),
        ]);
        let files = unpack(&zip).expect("unpacks");
        assert_eq!(files.len(), 2);
        assert_eq!(files["svc/a.wsdl"], "<definitions/>");
        assert_eq!(files["svc/xsd/b.xsd"], "<schema/>");
    }

    #[test]
    fn bombs_escapes_and_garbage_are_refused() {
        let big = vec![b'a'; (MAX_TOTAL + 10) as usize];
        let bomb = build(&[("a.xsd", &big, true)]);
        assert!(bomb.len() < 100_000);
        assert!(unpack(&bomb)
            .expect_err("bomb")
            .contains("times its compressed size"));
        // Stored entries (ratio 1) still stop at the total.
        let half = vec![b'a'; (MAX_TOTAL / 2 + 10) as usize];
        let wide = build(&[("a.xsd", &half, false), ("b.xsd", &half, false)]);
        assert!(unpack(&wide)
            .expect_err("too much in all")
            .contains("inflates to more than"));
        // A small file of one repeated character is no bomb.
        let small = vec![b' '; 60_000];
        assert!(unpack(&build(&[("a.xsd", &small, true)])).is_ok());
        assert!(unpack(&build(&[("../a.xsd", b"x", false)])).is_err());
        assert!(unpack(b"PK not really").is_err());
        assert!(unpack(&[]).is_err());
    }
}
