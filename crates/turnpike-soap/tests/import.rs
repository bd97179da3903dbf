//! Imports every test WSDL and asserts the operations, actions, versions, generated
//! schemas and the problems reported for what is not mapped.

mod support;

use serde_json::{json, Value};
use turnpike_soap::schema::openapi;
use turnpike_soap::{Documents, ImportError, SoapVersion, Style};

fn doc(folder: &str, root: &str) -> (turnpike_soap::Wsdl, Value) {
    let w = support::import(folder, root);
    let d = openapi(&w.types, &w.ports[0], "t", "v1");
    (w, d)
}

fn ops(w: &turnpike_soap::Wsdl, port: usize) -> Vec<(&str, &str)> {
    w.ports[port]
        .operations
        .iter()
        .map(|o| (o.name.as_str(), o.soap_action.as_str()))
        .collect()
}

#[test]
fn calculator_imports_an_xsd_by_schema_location() {
    let (w, d) = doc("wso2-calculator", "calculator.wsdl");
    assert_eq!(
        ops(&w, 0),
        [
            ("subtract", ""),
            ("multiply", ""),
            ("add", ""),
            ("divide", "")
        ]
    );
    assert_eq!(w.ports[0].version, SoapVersion::V11);
    assert_eq!(w.ports[0].service, "CalculatorService");
    assert!(w.problems.is_empty(), "{:?}", w.problems);
    let add = &d["paths"]["/add"]["post"];
    assert_eq!(
        add["requestBody"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/add"
    );
    let s = &d["components"]["schemas"]["add"];
    assert_eq!(s["properties"]["intA"]["type"], "integer");
    assert_eq!(s["properties"]["intA"]["format"], "int32");
    assert_eq!(s["required"], json!(["intA", "intB"]));
}

#[test]
fn the_xsd_missing_from_the_upload_is_named() {
    let mut only_wsdl = Documents::default();
    let text = std::fs::read_to_string(support::data_dir().join("wso2-calculator/calculator.wsdl"))
        .expect("read");
    only_wsdl.insert("calculator.wsdl", text);
    let w = turnpike_soap::import(&only_wsdl, "calculator.wsdl").expect("imports with problems");
    assert!(
        w.problems
            .iter()
            .any(|p| p.subject == "calculator.xsd" && p.why.contains("not in the uploaded files")),
        "{:?}",
        w.problems
    );
    assert!(
        w.problems
            .iter()
            .any(|p| p.operation.as_deref() == Some("add") && p.why.contains("not declared")),
        "{:?}",
        w.problems
    );
}

#[test]
fn countries_maps_the_enumeration() {
    let (w, d) = doc("spring-countries", "countries.wsdl");
    assert_eq!(ops(&w, 0), [("getCountry", "")]);
    assert_eq!(w.ports[0].address, "/services");
    let country = &d["components"]["schemas"]["country"];
    assert_eq!(
        country["properties"]["currency"]["enum"],
        json!(["GBP", "EUR", "PLN"])
    );
    assert_eq!(country["properties"]["population"]["type"], "integer");
}

#[test]
fn phoneverify_keeps_both_soap_versions_and_names_the_http_bindings() {
    let (w, d) = doc("wso2-phoneverify", "phoneverify.wsdl");
    let versions: Vec<_> = w
        .ports
        .iter()
        .map(|p| (p.name.as_str(), p.version))
        .collect();
    assert_eq!(
        versions,
        [
            ("PhoneVerifySoap", SoapVersion::V11),
            ("PhoneVerifySoap12", SoapVersion::V12)
        ]
    );
    assert_eq!(
        ops(&w, 0)[0],
        (
            "CheckPhoneNumber",
            "http://ws.cdyne.com/PhoneVerify/query/CheckPhoneNumber"
        )
    );
    let skipped: Vec<_> = w
        .problems
        .iter()
        .filter(|p| p.why.contains("is not SOAP"))
        .map(|p| p.subject.as_str())
        .collect();
    assert_eq!(
        skipped,
        [
            "port PhoneVerify/PhoneVerifyHttpGet",
            "port PhoneVerify/PhoneVerifyHttpPost"
        ]
    );
    let arr = &d["components"]["schemas"]["ArrayOfPhoneReturn"]["properties"]["PhoneReturn"];
    assert_eq!(arr["type"], "array");
    let ret = &d["components"]["schemas"]["PhoneReturn"]["properties"];
    assert_eq!(ret["Valid"]["type"], "boolean");
    let req = &d["components"]["schemas"]["CheckPhoneNumber"]["properties"];
    assert_eq!(req["PhoneData"]["format"], "byte");
    assert_eq!(
        d["components"]["schemas"]["ArrayOfString"]["properties"]["string"]["items"]["nullable"],
        true
    );
}

#[test]
fn soap12_only_wsdl_has_one_way_and_facets() {
    let (w, d) = doc("cxf-hello-world-soap12", "hello_world_soap12.wsdl");
    assert_eq!(w.ports[0].version, SoapVersion::V12);
    let one_way = w.ports[0]
        .operations
        .iter()
        .find(|o| o.name == "greetMeOneWay")
        .expect("op");
    assert!(one_way.output.is_none());
    assert!(d["paths"]["/greetMeOneWay"]["post"]["responses"]["202"].is_object());
    let ping = w.ports[0]
        .operations
        .iter()
        .find(|o| o.name == "pingMe")
        .expect("op");
    assert_eq!(ping.faults, ["pingMeFault"]);
    assert_eq!(
        d["components"]["schemas"]["greetMe"]["properties"]["requestType"]["maxLength"],
        30
    );
}

#[test]
fn wso2_complex_fixtures_match_wso2s_expectations_and_fix_its_gaps() {
    for name in ["nested", "arrays", "groups", "choice"] {
        let w = support::import("wso2-soap-to-rest-complex", &format!("{name}.wsdl"));
        assert_eq!(w.ports.len(), 1);
        assert_eq!(w.ports[0].service, format!("{name}SampleService"));
        assert_eq!(w.ports[0].name, format!("{name}SamplePort"));
        assert_eq!(w.ports[0].operations.len(), 1);
        assert_eq!(w.ports[0].operations[0].soap_action, "");
    }
    let (_, d) = doc("wso2-soap-to-rest-complex", "nested.wsdl");
    let s = &d["components"]["schemas"];
    assert_eq!(s["innerType2"]["required"], json!(["inner3", "int3"]));
    assert_eq!(s["FCUBS_HEADERType"]["required"][0], "PASSWORD");
    // nested anonymous types stay nested (WSO2 flattens them); PARAM repeats: an array.
    assert_eq!(
        s["FCUBS_HEADERType"]["properties"]["ADDL"]["properties"]["PARAM"]["type"],
        "array"
    );
    let (_, d) = doc("wso2-soap-to-rest-complex", "arrays.wsdl");
    let inner1 = &d["components"]["schemas"]["inputModel"]["properties"]["inner1"];
    assert_eq!(inner1["type"], "array");
    let (w, d) = doc("wso2-soap-to-rest-complex", "groups.wsdl");
    assert!(w.problems.is_empty(), "{:?}", w.problems);
    let t = &d["components"]["schemas"]["innerType1"];
    assert_eq!(t["required"], json!(["thing1", "thing2", "thing3"]));
    assert_eq!(t["properties"]["myAttribute"]["type"], "number");
    assert_eq!(t["properties"]["myAttribute"]["xml"]["attribute"], true);
}

#[test]
fn cxf_choice_and_group_become_one_of() {
    let w = support::import("cxf-choice-group", "hello_world.wsdl");
    assert_eq!(w.ports.len(), 10);
    let greeter = &w.ports[0];
    assert_eq!(greeter.operations.len(), 9);
    assert!(greeter
        .operations
        .iter()
        .all(|o| o.style == Style::Document));
    let bare = w
        .ports
        .iter()
        .find(|p| p.binding == "Doc_Lit_Bare_SOAPBinding")
        .expect("bare");
    assert_eq!(
        bare.operations[0].soap_action,
        "http://apache.org/hello_world_soap_http/testDocLitBare"
    );
    let d = openapi(&w.types, greeter, "t", "v1");
    let s = &d["components"]["schemas"];
    assert_eq!(
        s["testChoice"]["oneOf"],
        json!([{"required": ["arg2"]}, {"required": ["arg3"]}])
    );
    assert_eq!(s["testChoice"]["required"], json!(["arg0", "arg1"]));
    assert_eq!(
        s["testGroupResponse"]["oneOf"],
        json!([{"required": ["arg0", "arg1"]}, {"required": ["arg2", "arg3"]}])
    );
    let bare_doc = openapi(&w.types, bare, "t", "v1");
    let resp = &bare_doc["components"]["schemas"]["BareDocumentResponse"]["properties"];
    assert_eq!(resp["id"]["type"], "integer");
    assert_eq!(
        bare_doc["paths"]["/testDocLitBare"]["post"]["requestBody"]["content"]["application/json"]
            ["schema"]["type"],
        "string"
    );
}

#[test]
fn extension_restriction_recursion_lists_and_includes() {
    let main = r#"<definitions xmlns="http://schemas.xmlsoap.org/wsdl/" xmlns:soap12="http://schemas.xmlsoap.org/wsdl/soap12/" xmlns:t="urn:t" targetNamespace="urn:t">
  <types><xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:t"><xs:include schemaLocation="xsd/inc.xsd"/></xs:schema></types>
  <message name="in"><part name="p" element="t:tree"/></message>
  <message name="out"><part name="p" element="t:tree"/></message>
  <portType name="PT"><operation name="walk"><input message="t:in"/><output message="t:out"/></operation></portType>
  <binding name="B" type="t:PT"><soap12:binding style="document" transport="http://www.w3.org/2003/05/soap/bindings/HTTP/"/>
    <operation name="walk"><soap12:operation soapAction="urn:walk"/><input><soap12:body use="literal"/></input><output><soap12:body use="literal"/></output></operation></binding>
  <service name="S"><port name="P" binding="t:B"><soap12:address location="http://x/y"/></port></service>
</definitions>"#;
    let inc = r#"<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:t="urn:t" elementFormDefault="qualified">
  <xs:element name="tree" type="t:node"/>
  <xs:complexType name="base"><xs:sequence><xs:element name="id" type="xs:long"/></xs:sequence><xs:attribute name="lang" type="xs:language" use="required"/></xs:complexType>
  <xs:complexType name="node"><xs:complexContent><xs:extension base="t:base"><xs:sequence>
    <xs:element name="tags" type="t:tags" minOccurs="0"/>
    <xs:element name="when" type="xs:dateTime" minOccurs="0"/>
    <xs:element name="child" type="t:node" minOccurs="0" maxOccurs="unbounded"/>
  </xs:sequence></xs:extension></xs:complexContent></xs:complexType>
  <xs:simpleType name="tags"><xs:list itemType="xs:int"/></xs:simpleType>
  <xs:complexType name="price"><xs:simpleContent><xs:extension base="xs:decimal"><xs:attribute name="currency" type="xs:string"/></xs:extension></xs:simpleContent></xs:complexType>
</xs:schema>"#;
    let mut set = Documents::default();
    set.insert("svc.wsdl", main);
    set.insert("xsd/inc.xsd", inc);
    let w = turnpike_soap::import(&set, "svc.wsdl").expect("import");
    assert!(w.problems.is_empty(), "{:?}", w.problems);
    assert_eq!(w.ports[0].version, SoapVersion::V12);
    let d = openapi(&w.types, &w.ports[0], "t", "v1");
    let node = &d["components"]["schemas"]["node"];
    assert_eq!(node["allOf"][0]["$ref"], "#/components/schemas/base");
    assert_eq!(
        node["allOf"][1]["properties"]["child"]["items"]["$ref"],
        "#/components/schemas/node"
    );
    assert_eq!(
        node["allOf"][1]["properties"]["when"]["format"],
        "date-time"
    );
    assert_eq!(
        node["allOf"][1]["properties"]["tags"]["items"]["type"],
        "integer"
    );
    assert_eq!(
        d["components"]["schemas"]["base"]["required"],
        json!(["lang", "id"])
    );
    // the chameleon include took the includer's namespace, elements qualified.
    let op = &w.ports[0].operations[0];
    let env = turnpike_soap::write::request_envelope(
        &w.types,
        op,
        SoapVersion::V12,
        &json!({"lang": "en", "id": 1, "tags": [1, 2], "child": [{"lang": "fr", "id": 2}]}),
    )
    .expect("envelope");
    assert!(env.contains(r#"<tree xmlns="urn:t" lang="en"><id>1</id><tags>1 2</tags><child lang="fr"><id>2</id></child></tree>"#), "{env}");
}

#[test]
fn not_a_wsdl_and_no_soap_port_are_errors() {
    let set = Documents::single("a.wsdl", "<a/>");
    assert_eq!(
        turnpike_soap::import(&set, "a.wsdl").err(),
        Some(ImportError::NotWsdl("a.wsdl".into()))
    );
    let set = Documents::single(
        "a.wsdl",
        r#"<definitions xmlns="http://schemas.xmlsoap.org/wsdl/"/>"#,
    );
    assert_eq!(
        turnpike_soap::import(&set, "a.wsdl").err(),
        Some(ImportError::NoSoapPort)
    );
    let set = Documents::single(
        "a.wsdl",
        r#"<!DOCTYPE d [<!ENTITY e SYSTEM "file:///etc/passwd">]><definitions xmlns="http://schemas.xmlsoap.org/wsdl/">&e;</definitions>"#,
    );
    assert!(matches!(
        turnpike_soap::import(&set, "a.wsdl"),
        Err(ImportError::Xml { .. })
    ));
    assert_eq!(
        turnpike_soap::import(&set, "b.wsdl").err(),
        Some(ImportError::MissingFile("b.wsdl".into()))
    );
}

#[test]
fn the_bench_echo_service_wsdl_imports_with_both_versions() {
    let set = Documents::single("echo.wsdl", include_str!("../../../bench/soap/echo.wsdl"));
    let w = turnpike_soap::import(&set, "echo.wsdl").expect("imports");
    assert!(w.problems.is_empty(), "{:?}", w.problems);
    let versions: Vec<_> = w.ports.iter().map(|p| p.version).collect();
    assert_eq!(versions, [SoapVersion::V12, SoapVersion::V11]);
    assert_eq!(ops(&w, 0), [("echo", "urn:tp:echo#echo")]);
}
