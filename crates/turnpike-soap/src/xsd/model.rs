//! The resolved XSD type model the mapper runs on: every reference (type, element,
//! group, attribute) is resolved at import time, complex types live in one arena and
//! refer to each other by index, so recursive types are plain cycles of indexes.

use crate::xml::QName;

/// Index of a complex type in [`TypeModel::complex`].
pub type ComplexId = usize;

/// All complex types an import reached.
#[derive(Debug, Clone, Default)]
pub struct TypeModel {
    pub complex: Vec<ComplexType>,
}

impl TypeModel {
    pub fn get(&self, id: ComplexId) -> &ComplexType {
        &self.complex[id]
    }

    /// The fields of `id` in document order, the extension bases' first.
    pub fn fields(&self, id: ComplexId) -> &[Field] {
        &self.complex[id].fields
    }
}

/// What a value of an element or part is.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    Simple(SimpleType),
    Complex(ComplexId),
    /// `xs:anyType` or an unresolvable reference: carried as text.
    Any,
}

/// A simple type: a built-in base with the facets the JSON schema can express.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SimpleType {
    pub builtin: Builtin,
    /// `xs:list`: a whitespace-separated list, a JSON array.
    pub list: bool,
    pub enumeration: Vec<String>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub pattern: Option<String>,
    /// `pattern` compiled (whole-value match), what SOAP-to-REST requests are held to;
    /// a pattern the regex engine cannot read is dropped with its text (`link::facets`),
    /// so the generated OpenAPI and the check agree.
    pub pattern_re: Option<Pattern>,
    pub min_inclusive: Option<String>,
    pub max_inclusive: Option<String>,
}

/// A compiled `pattern` facet.
#[derive(Clone)]
pub struct Pattern(pub std::sync::Arc<regex::Regex>);

impl Pattern {
    /// Most memory one compiled pattern may take (a hostile WSDL cannot blow it up).
    const SIZE_LIMIT: usize = 1 << 20;

    /// The XSD pattern as a regex matching whole values; `None` when it does not compile.
    pub fn compile(xsd: &str) -> Option<Pattern> {
        regex::RegexBuilder::new(&format!("^(?:{xsd})$"))
            .size_limit(Self::SIZE_LIMIT)
            .build()
            .ok()
            .map(|r| Pattern(std::sync::Arc::new(r)))
    }

    pub fn matches(&self, value: &str) -> bool {
        self.0.is_match(value)
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Pattern) -> bool {
        self.0.as_str() == other.0.as_str()
    }
}

impl std::fmt::Debug for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.as_str())
    }
}

impl SimpleType {
    pub fn of(builtin: Builtin) -> SimpleType {
        SimpleType {
            builtin,
            ..SimpleType::default()
        }
    }
}

/// The built-in XSD types, grouped by what they become in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Builtin {
    #[default]
    String,
    Boolean,
    /// `xs:decimal`: a JSON number.
    Decimal,
    Float,
    Double,
    /// Integers with their inclusive bounds (`xs:integer` is unbounded in XSD; we carry
    /// it as a 64-bit JSON integer).
    Integer {
        min: i128,
        max: i128,
        format: Option<&'static str>,
    },
    Date,
    DateTime,
    Time,
    Duration,
    Base64Binary,
    HexBinary,
    AnyUri,
}

impl Builtin {
    /// The built-in named `local` in the XSD (or SOAP encoding) namespace.
    pub fn from_name(local: &str) -> Option<Builtin> {
        let int = |min: i128, max: i128, format| Builtin::Integer { min, max, format };
        Some(match local {
            "string" | "normalizedString" | "token" | "language" | "Name" | "NCName" | "ID"
            | "IDREF" | "IDREFS" | "ENTITY" | "ENTITIES" | "NMTOKEN" | "NMTOKENS" | "QName"
            | "NOTATION" | "anySimpleType" | "gYear" | "gYearMonth" | "gMonth" | "gMonthDay"
            | "gDay" => Builtin::String,
            "boolean" => Builtin::Boolean,
            "decimal" => Builtin::Decimal,
            "float" => Builtin::Float,
            "double" => Builtin::Double,
            "integer" => int(i64::MIN.into(), i64::MAX.into(), None),
            "long" => int(i64::MIN.into(), i64::MAX.into(), Some("int64")),
            "int" => int(i32::MIN.into(), i32::MAX.into(), Some("int32")),
            "short" => int(i16::MIN.into(), i16::MAX.into(), Some("int32")),
            "byte" => int(i8::MIN.into(), i8::MAX.into(), Some("int32")),
            "nonNegativeInteger" => int(0, i64::MAX.into(), None),
            "positiveInteger" => int(1, i64::MAX.into(), None),
            "nonPositiveInteger" => int(i64::MIN.into(), 0, None),
            "negativeInteger" => int(i64::MIN.into(), -1, None),
            "unsignedLong" => int(0, u64::MAX.into(), Some("int64")),
            "unsignedInt" => int(0, u32::MAX.into(), Some("int64")),
            "unsignedShort" => int(0, u16::MAX.into(), Some("int32")),
            "unsignedByte" => int(0, u8::MAX.into(), Some("int32")),
            "date" => Builtin::Date,
            "dateTime" | "dateTimeStamp" => Builtin::DateTime,
            "time" => Builtin::Time,
            "duration" | "dayTimeDuration" | "yearMonthDuration" => Builtin::Duration,
            "base64Binary" => Builtin::Base64Binary,
            "hexBinary" => Builtin::HexBinary,
            "anyURI" => Builtin::AnyUri,
            _ => return None,
        })
    }
}

/// How often a particle may occur.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Occurs {
    pub min: u32,
    /// None: unbounded.
    pub max: Option<u32>,
}

impl Occurs {
    pub const ONE: Occurs = Occurs {
        min: 1,
        max: Some(1),
    };

    /// More than one occurrence allowed: a JSON array.
    pub fn repeats(self) -> bool {
        self.max.is_none_or(|m| m > 1)
    }
}

/// A complex type, resolved.
#[derive(Debug, Clone, Default)]
pub struct ComplexType {
    /// The declared name; None for anonymous types.
    pub name: Option<QName>,
    /// The global element whose anonymous type this is (names its schema component).
    pub element_name: Option<QName>,
    /// `complexContent/extension` base.
    pub base: Option<ComplexId>,
    /// Own content model (after the base's, for extensions).
    pub content: Option<Group>,
    pub attributes: Vec<Attribute>,
    /// `simpleContent`: the text's type.
    pub text: Option<SimpleType>,
    /// Flattened element fields, the base's first: what the XML reader looks names up in.
    pub fields: Vec<Field>,
}

/// A model group: `sequence`, `choice` or `all`.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub kind: GroupKind,
    pub occurs: Occurs,
    pub items: Vec<Particle>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupKind {
    Sequence,
    Choice,
    All,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Particle {
    Element(Box<Element>),
    Group(Group),
    /// `xs:any`: skipped on both sides (reported at import).
    Any,
}

/// An element declaration as used at one place.
#[derive(Debug, Clone, PartialEq)]
pub struct Element {
    pub name: QName,
    pub ty: Ty,
    pub occurs: Occurs,
    pub nillable: bool,
}

/// An attribute declaration.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    pub name: QName,
    /// The JSON property: the local name, or `@name` when an element has that name.
    pub key: String,
    pub ty: SimpleType,
    pub required: bool,
}

/// An element as the JSON side sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// JSON property name (the element's local name).
    pub key: String,
    pub element: Element,
    /// A JSON array: the element or a group around it repeats, or a sibling has the same
    /// name.
    pub array: bool,
    /// Must be present: minOccurs >= 1 all the way up, outside any choice.
    pub required: bool,
}

/// The JSON property that carries `simpleContent` text.
pub const TEXT_KEY: &str = "$value";
