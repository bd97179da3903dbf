//! SOAP-to-REST's request check and the OpenAPI document it generates say the same thing
//! (issue 29): each case is read from the generated schema and then tried on the writer:
//! `null` for a nillable root, an XSD `pattern` and length facets, a JSON number for an
//! `xs:string`; and an rpc/literal message repeating a part name gives a valid schema.

use serde_json::{json, Value};
use turnpike_soap::write::request_envelope;
use turnpike_soap::{import, Documents, SoapVersion};

const WSDL: &str = r#"<definitions xmlns="http://schemas.xmlsoap.org/wsdl/"
    xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/" xmlns:xs="http://www.w3.org/2001/XMLSchema"
    xmlns:t="urn:t" targetNamespace="urn:t">
  <types><xs:schema targetNamespace="urn:t" elementFormDefault="qualified">
    <xs:simpleType name="Code"><xs:restriction base="xs:string">
      <xs:pattern value="[A-Z]{3}-\d{2}"/><xs:maxLength value="6"/></xs:restriction></xs:simpleType>
    <xs:element name="lookup" nillable="true"><xs:complexType><xs:sequence>
      <xs:element name="code" type="t:Code"/><xs:element name="note" type="xs:string" minOccurs="0"/>
    </xs:sequence></xs:complexType></xs:element>
    <xs:element name="lookupResponse" type="xs:string"/>
  </xs:schema></types>
  <message name="in"><part name="parameters" element="t:lookup"/></message>
  <message name="out"><part name="parameters" element="t:lookupResponse"/></message>
  <message name="twice"><part name="a" type="xs:string"/><part name="a" type="xs:string"/></message>
  <portType name="P">
    <operation name="lookup"><input message="t:in"/><output message="t:out"/></operation>
    <operation name="pair"><input message="t:twice"/><output message="t:out"/></operation>
  </portType>
  <binding name="B" type="t:P"><soap:binding style="document" transport="http://schemas.xmlsoap.org/soap/http"/>
    <operation name="lookup"><soap:operation soapAction="lookup"/><input><soap:body use="literal"/></input><output><soap:body use="literal"/></output></operation>
  </binding>
  <binding name="R" type="t:P"><soap:binding style="rpc" transport="http://schemas.xmlsoap.org/soap/http"/>
    <operation name="pair"><soap:operation soapAction="pair"/><input><soap:body use="literal" namespace="urn:t"/></input><output><soap:body use="literal" namespace="urn:t"/></output></operation>
  </binding>
  <service name="S"><port name="Doc" binding="t:B"><soap:address location="http://x/"/></port>
    <port name="Rpc" binding="t:R"><soap:address location="http://x/"/></port></service>
</definitions>"#;

fn schema_of(doc: &Value, s: &Value) -> Value {
    match s.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            doc["components"]["schemas"][r.trim_start_matches("#/components/schemas/")].clone()
        }
        None => s.clone(),
    }
}

#[test]
fn the_request_check_agrees_with_the_generated_openapi() {
    let w = import(&Documents::single("t.wsdl", WSDL), "t.wsdl").expect("imports");
    let port = w.ports.iter().find(|p| p.name == "Doc").expect("port");
    let op = &port.operations[0];
    let doc = turnpike_soap::schema::openapi(&w.types, port, "T", "1");
    let body =
        &doc["paths"]["/lookup"]["post"]["requestBody"]["content"]["application/json"]["schema"];
    let write = |v: Value| request_envelope(&w.types, op, SoapVersion::V11, &v);

    // The root is nillable: the schema says so, and null is sent as xsi:nil.
    assert!(body.to_string().contains("\"nullable\":true"), "{body}");
    let env = write(Value::Null).expect("null accepted for a nillable root");
    assert!(env.contains("xsi:nil=\"true\""), "{env}");

    // The pattern and length the schema shows are enforced.
    let lookup = schema_of(&doc, &body["allOf"][0]);
    let code = schema_of(&doc, &lookup["properties"]["code"]);
    assert_eq!(code["pattern"], "^(?:[A-Z]{3}-\\d{2})$", "{code}");
    assert_eq!(code["maxLength"], 6);
    assert!(write(json!({"code": "ABC-12"})).is_ok());
    let bad = write(json!({"code": "abc-12"})).expect_err("pattern");
    assert!(bad.to_string().contains("pattern"), "{bad}");
    assert!(
        write(json!({"code": "ABC-123"})).is_err(),
        "pattern and maxLength"
    );

    // A string type takes strings: the schema says `type: string`, a number is refused.
    assert_eq!(lookup["properties"]["note"]["type"], "string");
    let number = write(json!({"code": "ABC-12", "note": 7})).expect_err("number");
    assert!(number.to_string().contains("expected a string"), "{number}");
}

#[test]
fn a_repeated_rpc_part_name_gives_unique_required_names() {
    let w = import(&Documents::single("t.wsdl", WSDL), "t.wsdl").expect("imports");
    let port = w.ports.iter().find(|p| p.name == "Rpc").expect("port");
    let doc = turnpike_soap::schema::openapi(&w.types, port, "T", "1");
    let body =
        &doc["paths"]["/pair"]["post"]["requestBody"]["content"]["application/json"]["schema"];
    let required = body["required"].as_array().expect("required");
    let mut unique = required.clone();
    unique.dedup();
    assert_eq!(required, &unique, "{body}");
    assert_eq!(required.len(), 1, "{body}");
}
