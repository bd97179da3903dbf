//! The mapper on bad input, rpc wrappers, faults, envelope checks, operation lookup and
//! `?wsdl` address rewriting.

mod support;

use serde_json::json;
use turnpike_soap::envelope::{self, Blame};
use turnpike_soap::read::{response_json, Reply};
use turnpike_soap::write::request_envelope;
use turnpike_soap::{MapError, SoapVersion, Style};

#[test]
fn bad_json_is_refused_with_its_path() {
    let w = support::import("wso2-calculator", "calculator.wsdl");
    let add = &w.ports[0].operations[2];
    let err = |v| request_envelope(&w.types, add, SoapVersion::V11, &v).expect_err("refused");
    assert_eq!(
        err(json!({"intA": 1})),
        MapError::Invalid {
            path: "intB".into(),
            why: "required property missing".into()
        }
    );
    assert!(
        matches!(err(json!({"intA": 1, "intB": 2, "x": 3})), MapError::Invalid { path, .. } if path == "x")
    );
    assert!(
        matches!(err(json!({"intA": "one", "intB": 2})), MapError::Invalid { why, .. } if why == "expected an integer")
    );
    assert!(
        matches!(err(json!({"intA": 3_000_000_000u64, "intB": 2})), MapError::Invalid { why, .. } if why.starts_with("out of range"))
    );
    assert!(
        matches!(err(json!([1, 2])), MapError::Invalid { why, .. } if why == "expected an object")
    );
    let ok = request_envelope(
        &w.types,
        add,
        SoapVersion::V11,
        &json!({"intA": "7", "intB": -2}),
    )
    .expect("numeric strings ok");
    assert!(ok.contains("<add xmlns=\"http://example.com/\"><intA xmlns=\"\">7</intA><intB xmlns=\"\">-2</intB></add>"), "{ok}");

    let w = support::import("spring-countries", "countries.wsdl");
    let op = &w.ports[0].operations[0];
    let env = request_envelope(
        &w.types,
        op,
        SoapVersion::V11,
        &json!({"name": "<Spain & \"co\">"}),
    )
    .expect("ok");
    assert!(
        env.contains("<name>&lt;Spain &amp; &quot;co&quot;&gt;</name>"),
        "{env}"
    );
    let w = support::import("cxf-choice-group", "hello_world.wsdl");
    let choice = w.ports[0]
        .operations
        .iter()
        .find(|o| o.name == "testChoice")
        .expect("op");
    let e = request_envelope(
        &w.types,
        choice,
        SoapVersion::V11,
        &json!({"arg0": "a", "arg1": "b", "arg2": "c", "arg3": "d"}),
    );
    assert!(
        matches!(e, Err(MapError::Invalid { why, .. }) if why.contains("more than one alternative"))
    );
    let e = request_envelope(
        &w.types,
        choice,
        SoapVersion::V11,
        &json!({"arg0": "a", "arg1": "b"}),
    );
    assert!(
        matches!(e, Err(MapError::Invalid { why, .. }) if why.contains("one alternative of a choice is required"))
    );
}

#[test]
fn enumerations_and_nil_are_checked() {
    let w = support::import("cxf-choice-group", "hello_world.wsdl");
    let op = w.ports[0]
        .operations
        .iter()
        .find(|o| o.name == "testNillable")
        .expect("op");
    let env = request_envelope(
        &w.types,
        op,
        SoapVersion::V11,
        &json!({"NillElem": null, "intElem": 1}),
    )
    .expect("nillable");
    assert!(env.contains("xsi:nil=\"true\""), "{env}");
    let e = request_envelope(
        &w.types,
        op,
        SoapVersion::V11,
        &json!({"NillElem": "x", "intElem": null}),
    );
    assert!(matches!(e, Err(MapError::Invalid { path, .. }) if path == "intElem"));
    let w = support::import("spring-countries", "countries.wsdl");
    let op = &w.ports[0].operations[0];
    let resp = |cur: &str| {
        format!(
            r#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><ns2:getCountryResponse xmlns:ns2="https://spring.io/guides/gs-producing-web-service"><ns2:country><ns2:name>Spain</ns2:name><ns2:population>46704314</ns2:population><ns2:capital>Madrid</ns2:capital><ns2:currency>{cur}</ns2:currency></ns2:country></ns2:getCountryResponse></s:Body></s:Envelope>"#
        )
    };
    let r = response_json(&w.types, op, &resp("EUR")).expect("reads");
    assert_eq!(
        r,
        Reply::Data(
            json!({"country": {"name": "Spain", "population": 46704314, "capital": "Madrid", "currency": "EUR"}})
        )
    );
}

#[test]
fn responses_are_typed_and_one_item_arrays_stay_arrays() {
    let w = support::import("wso2-phoneverify", "phoneverify.wsdl");
    let op = &w.ports[0].operations[0];
    let text = std::fs::read_to_string(
        support::data_dir().join("wso2-phoneverify/checkPhoneNumberResponseBody.xml"),
    )
    .expect("read");
    let Reply::Data(v) = response_json(&w.types, op, &text).expect("reads") else {
        panic!("fault")
    };
    assert_eq!(v["CheckPhoneNumberResult"]["Valid"], json!(true));
    assert_eq!(v["CheckPhoneNumberResult"]["Wireless"], json!(false));
    assert_eq!(v["CheckPhoneNumberResult"]["Company"], json!("Toll Free"));
    assert_eq!(v["CheckPhoneNumberResult"]["RC"], json!(""));
    let many = &w.ports[0].operations[1];
    let one = r#"<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><CheckPhoneNumbersResponse xmlns="http://ws.cdyne.com/PhoneVerify/query"><CheckPhoneNumbersResult><PhoneReturn><Valid>1</Valid><Wireless>0</Wireless></PhoneReturn></CheckPhoneNumbersResult></CheckPhoneNumbersResponse></soap:Body></soap:Envelope>"#;
    let Reply::Data(v) = response_json(&w.types, many, one).expect("reads") else {
        panic!("fault")
    };
    assert_eq!(
        v,
        json!({"CheckPhoneNumbersResult": {"PhoneReturn": [{"Valid": true, "Wireless": false}]}})
    );
    let bad = one.replace("<Valid>1</Valid>", "<Valid>maybe</Valid>");
    assert!(
        matches!(response_json(&w.types, many, &bad), Err(MapError::Invalid { why, .. }) if why.starts_with("not a boolean"))
    );
}

#[test]
fn rpc_literal_wraps_parts_in_the_operation_element() {
    let w = support::import("../rpc", "quotes.wsdl");
    let op = &w.ports[0].operations[0];
    assert_eq!(op.style, Style::Rpc);
    assert_eq!(op.soap_action, "urn:example:quotes#getQuote");
    let env = request_envelope(
        &w.types,
        op,
        SoapVersion::V11,
        &json!({"symbol": "ACME", "count": 2, "audit": {"who": "me"}}),
    )
    .expect("ok");
    assert!(env.contains(r#"<getQuote xmlns="urn:example:quotes"><symbol xmlns="">ACME</symbol><count xmlns="">2</count><audit><who>me</who></audit></getQuote>"#), "{env}");
    let resp = r#"<e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope"><e:Body><q:getQuoteResponse xmlns:q="urn:example:quotes"><quote delayed="true"><q:symbol>ACME</q:symbol><q:price>12.50</q:price><q:history>1.5</q:history><q:history>2</q:history></quote></q:getQuoteResponse></e:Body></e:Envelope>"#;
    let r = response_json(&w.types, op, resp).expect("reads");
    assert_eq!(
        r,
        Reply::Data(json!({"delayed": true, "symbol": "ACME", "price": 12.5, "history": [1.5, 2]}))
    );
}

#[test]
fn faults_of_both_versions_are_read() {
    let w = support::import("wso2-calculator", "calculator.wsdl");
    let op = &w.ports[0].operations[3];
    let f11 = r#"<S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body><S:Fault><faultcode>S:Client</faultcode><faultstring>/ by zero</faultstring><detail><x>d</x></detail></S:Fault></S:Body></S:Envelope>"#;
    let structured = r#"<S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body><S:Fault><faultcode>S:Server</faultcode><faultstring>bad</faultstring><detail><e:err xmlns:e="urn:e" severity="high"><code>42</code><field>a</field><field>b</field><note lang="en">why</note></e:err></detail></S:Fault></S:Body></S:Envelope>"#;
    let Reply::Fault(f) = response_json(&w.types, op, structured).expect("reads") else {
        panic!("data")
    };
    assert_eq!(
        f.detail,
        Some(
            json!({"err": {"@severity": "high", "code": "42", "field": ["a", "b"],
            "note": {"@lang": "en", "#text": "why"}}})
        )
    );
    let Reply::Fault(f) = response_json(&w.types, op, f11).expect("reads") else {
        panic!("data")
    };
    assert_eq!(
        (
            f.code.as_str(),
            f.reason.as_str(),
            f.detail.clone(),
            f.is_client()
        ),
        ("Client", "/ by zero", Some(json!({"x": "d"})), true)
    );
    let f12 = envelope::fault_envelope(
        SoapVersion::V12,
        Blame::Server,
        "upstream <timed> out",
        "upstream_timeout",
        504,
        "r-1",
    );
    let Reply::Fault(f) = response_json(&w.types, op, &f12).expect("reads") else {
        panic!("data")
    };
    assert_eq!(
        (f.code.as_str(), f.reason.as_str(), f.is_client()),
        ("Receiver", "upstream <timed> out", false)
    );
    assert_eq!(
        f.detail,
        Some(json!({"error": {"code": "upstream_timeout", "status": "504", "request_id": "r-1"}}))
    );
    let f11 = envelope::fault_envelope(
        SoapVersion::V11,
        Blame::Client,
        "no",
        "unauthorized",
        401,
        "r-2",
    );
    assert!(
        f11.contains("<faultcode>soapenv:Client</faultcode>"),
        "{f11}"
    );
}

#[test]
fn envelope_checks_and_operation_lookup() {
    let w = support::import("wso2-phoneverify", "phoneverify.wsdl");
    let req = std::fs::read_to_string(
        support::data_dir().join("wso2-phoneverify/checkPhoneNumberRequestBody.xml"),
    )
    .expect("read");
    let info = envelope::check(&req, &[SoapVersion::V11]).expect("valid");
    assert_eq!(info.version, SoapVersion::V11);
    let by_body = envelope::find_operation(&w.ports[0], None, &info).expect("by body");
    assert_eq!(by_body.name, "CheckPhoneNumber");
    let action = envelope::request_action(
        Some("\"http://ws.cdyne.com/PhoneVerify/query/CheckPhoneNumbers\""),
        None,
    );
    assert_eq!(
        envelope::find_operation(&w.ports[0], action, &info).map(|o| o.name.as_str()),
        Some("CheckPhoneNumbers")
    );
    let action = envelope::request_action(None, Some("application/soap+xml; charset=utf-8; action=\"http://ws.cdyne.com/PhoneVerify/query/CheckPhoneNumbers\""));
    assert_eq!(
        action,
        Some("http://ws.cdyne.com/PhoneVerify/query/CheckPhoneNumbers")
    );
    assert!(
        matches!(envelope::check(&req, &[SoapVersion::V12]), Err(MapError::NotEnvelope(m)) if m.contains("SOAP 1.1 envelope"))
    );
    assert!(matches!(
        envelope::check("<a/>", &[SoapVersion::V11]),
        Err(MapError::NotEnvelope(_))
    ));
    let no_body = r#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Header/></s:Envelope>"#;
    assert!(
        matches!(envelope::check(no_body, &[SoapVersion::V11]), Err(MapError::NotEnvelope(m)) if m == "no Body")
    );
    assert!(matches!(
        envelope::check("<s:Envelope", &[SoapVersion::V11]),
        Err(MapError::Xml(_))
    ));
}

#[test]
fn wsdl_addresses_are_rewritten_in_place() {
    let text =
        std::fs::read_to_string(support::data_dir().join("wso2-phoneverify/phoneverify.wsdl"))
            .expect("read");
    let out =
        envelope::rewrite_addresses(&text, "http://gw:8280/phone/v1?a=1&b=2").expect("rewrites");
    assert_eq!(
        out.matches("location=\"http://gw:8280/phone/v1?a=1&amp;b=2\"")
            .count(),
        2
    );
    // http:address of the HTTP GET/POST ports is not a SOAP address: unchanged.
    assert!(
        out.contains("http:address location=\"https://ws.cdyne.com/phoneverify/phoneverify.asmx\"")
    );
    let (new, old) = (
        "http://gw:8280/phone/v1?a=1&amp;b=2".len(),
        "https://ws.cdyne.com/phoneverify/phoneverify.asmx".len(),
    );
    assert_eq!(
        out.len() + 2 * old,
        text.len() + 2 * new,
        "nothing else changed in length"
    );
}
