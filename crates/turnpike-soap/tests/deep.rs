//! Very deep documents are refused without exhausting the stack, in a thread with a small
//! stack like a runtime worker's.

#[test]
fn very_deep_envelopes_are_refused_on_a_small_stack() {
    let deep = format!(
        "<s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\"><s:Body>{}{}</s:Body></s:Envelope>",
        "<a>".repeat(100_000),
        "</a>".repeat(100_000)
    );
    let t = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || {
            turnpike_soap::envelope::check(&deep, &[turnpike_soap::SoapVersion::V12]).err()
        })
        .expect("thread");
    let err = t.join().expect("no stack overflow");
    assert!(
        matches!(
            err,
            Some(turnpike_soap::MapError::Xml(
                turnpike_soap::XmlError::TooDeep { .. }
            ))
        ),
        "{err:?}"
    );
}
