//! The fast parser: executable GraphQL documents (operations and fragments) straight
//! into apollo-compiler's AST, without apollo-parser's lossless syntax tree, for
//! apollo-compiler's validation to run on unchanged. It builds the AST apollo-compiler's
//! own parse would (the same nodes, names, values and byte spans), and declines
//! whatever it is not sure of, so that the caller parses that text with apollo-compiler
//! instead: any syntax error, type system definitions, block strings, `\u` escapes
//! outside the Basic Multilingual Plane's non-surrogates, non-ASCII outside strings and
//! comments, and texts near the token or nesting caps (apollo-parser's limits then
//! decide). Declining is always safe; accepting must agree with apollo-compiler, which
//! `tests/fastparse.rs` checks differentially on generated documents.

use apollo_compiler::ast::{
    Argument, Definition, Directive, DirectiveList, Document, Field, FloatValue,
    FragmentDefinition, FragmentSpread, InlineFragment, IntValue, OperationDefinition,
    OperationType, Selection, Type, Value, VariableDefinition,
};
use apollo_compiler::parser::SourceSpan;
use apollo_compiler::{Name, Node};

use crate::spans::Spans;

/// Why the fast parser handed a text back to apollo-compiler's parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Declined {
    /// Not (or not surely) valid syntax: apollo-compiler reports it.
    Syntax,
    /// Syntax the fast parser leaves to apollo-compiler (type system definitions,
    /// block strings, rare escapes, non-ASCII outside strings).
    Unsupported,
    /// Near the token or nesting cap, where apollo-parser's own counting decides.
    NearLimit,
    /// No span table for a text this long.
    TooLong,
}

type Parsed<T> = Result<T, Declined>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Punct(u8),
    Spread,
    Name,
    Int,
    Float,
    Str,
    Eof,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    kind: Tok,
    start: usize,
    end: usize,
    /// A comma came before it: apollo-parser's two-token lookahead (alias `name :`,
    /// `... name`) skips whitespace and comments but not commas.
    comma: bool,
}

/// Parses `src` as an executable document, or declines it.
pub(crate) fn parse(src: &str, max_tokens: usize, max_nesting: usize) -> Parsed<Document> {
    let spans = Spans::for_len(src.len()).ok_or(Declined::TooLong)?;
    let mut p = FastParser {
        src,
        bytes: src.as_bytes(),
        pos: 0,
        spans,
        tokens: 1,
        max_tokens,
        depth: 0,
        max_depth: max_nesting.saturating_sub(2),
        prev_end: 0,
        peeked: None,
    };
    let mut doc = Document::new();
    loop {
        let t = p.peek()?;
        match t.kind {
            Tok::Eof => break,
            Tok::Punct(b'{') => {
                let set = p.selection_set()?;
                let op = OperationDefinition {
                    operation_type: OperationType::Query,
                    name: None,
                    variables: Vec::new(),
                    directives: DirectiveList::new(),
                    selection_set: set,
                };
                doc.definitions
                    .push(Definition::OperationDefinition(p.node(op, t.start)?));
            }
            Tok::Name => {
                let def = match p.text(t) {
                    "query" => p.operation(OperationType::Query)?,
                    "mutation" => p.operation(OperationType::Mutation)?,
                    "subscription" => p.operation(OperationType::Subscription)?,
                    "fragment" => p.fragment()?,
                    _ => return Err(Declined::Unsupported),
                };
                doc.definitions.push(def);
            }
            _ => return Err(Declined::Unsupported),
        }
    }
    if doc.definitions.is_empty() {
        return Err(Declined::Syntax);
    }
    Ok(doc)
}

struct FastParser<'s> {
    src: &'s str,
    bytes: &'s [u8],
    pos: usize,
    spans: Spans,
    /// An upper bound of apollo-parser's token count (every ignored byte one token).
    tokens: usize,
    max_tokens: usize,
    depth: usize,
    max_depth: usize,
    /// End of the last token taken: the end of the node being closed.
    prev_end: usize,
    peeked: Option<Token>,
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_name_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl<'s> FastParser<'s> {
    fn text(&self, t: Token) -> &'s str {
        self.src.get(t.start..t.end).unwrap_or("")
    }

    fn span(&self, start: usize) -> Parsed<SourceSpan> {
        self.spans
            .span(start, self.prev_end)
            .ok_or(Declined::TooLong)
    }

    fn node<T>(&self, value: T, start: usize) -> Parsed<Node<T>> {
        Ok(Node::new_parsed(value, self.span(start)?))
    }

    fn count(&mut self, n: usize) -> Parsed<()> {
        self.tokens += n;
        if self.tokens + 2 >= self.max_tokens {
            return Err(Declined::NearLimit);
        }
        Ok(())
    }

    fn enter(&mut self) -> Parsed<()> {
        self.depth += 1;
        if self.depth >= self.max_depth {
            return Err(Declined::NearLimit);
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    fn peek(&mut self) -> Parsed<Token> {
        if let Some(t) = self.peeked {
            return Ok(t);
        }
        let t = self.lex()?;
        self.peeked = Some(t);
        Ok(t)
    }

    fn bump(&mut self) -> Parsed<Token> {
        let t = self.peek()?;
        self.peeked = None;
        if t.kind != Tok::Eof {
            self.prev_end = t.end;
        }
        Ok(t)
    }

    fn expect(&mut self, punct: u8) -> Parsed<Token> {
        let t = self.bump()?;
        if t.kind != Tok::Punct(punct) {
            return Err(Declined::Syntax);
        }
        Ok(t)
    }

    fn at(&mut self, punct: u8) -> Parsed<bool> {
        Ok(self.peek()?.kind == Tok::Punct(punct))
    }

    fn eat(&mut self, punct: u8) -> Parsed<bool> {
        let yes = self.at(punct)?;
        if yes {
            self.bump()?;
        }
        Ok(yes)
    }

    fn name(&mut self) -> Parsed<Name> {
        let t = self.bump()?;
        if t.kind != Tok::Name {
            return Err(Declined::Syntax);
        }
        self.name_of(t)
    }

    fn name_of(&self, t: Token) -> Parsed<Name> {
        let span = self.spans.span(t.start, t.end).ok_or(Declined::TooLong)?;
        Ok(Name::new_unchecked(self.text(t)).with_location(span))
    }

    /// The next significant token; ignored tokens (whitespace, commas, comments) are
    /// skipped and counted.
    fn lex(&mut self) -> Parsed<Token> {
        let b = self.bytes;
        let mut ignored = 0;
        let mut comma = false;
        loop {
            match b.get(self.pos) {
                Some(b' ' | b'\t' | b'\n' | b'\r') => {
                    self.pos += 1;
                    ignored += 1;
                }
                Some(b',') => {
                    self.pos += 1;
                    ignored += 1;
                    comma = true;
                }
                Some(b'#') => {
                    while let Some(&c) = b.get(self.pos) {
                        if c == b'\n' || c == b'\r' {
                            break;
                        }
                        self.pos += 1;
                    }
                    ignored += 1;
                }
                _ => break,
            }
        }
        self.count(ignored + 1)?;
        let start = self.pos;
        let Some(&c) = b.get(start) else {
            return Ok(Token {
                kind: Tok::Eof,
                start,
                end: start,
                comma,
            });
        };
        let kind = match c {
            b'!' | b'$' | b'&' | b'(' | b')' | b':' | b'=' | b'@' | b'[' | b']' | b'{' | b'|'
            | b'}' => {
                self.pos += 1;
                Tok::Punct(c)
            }
            b'.' => {
                if b.get(start..start + 3) != Some(b"...") {
                    return Err(Declined::Syntax);
                }
                self.pos += 3;
                Tok::Spread
            }
            c if is_name_start(c) => {
                self.pos += 1;
                while b.get(self.pos).is_some_and(|&c| is_name_continue(c)) {
                    self.pos += 1;
                }
                Tok::Name
            }
            b'-' | b'0'..=b'9' => self.number()?,
            b'"' => self.string()?,
            _ => return Err(Declined::Unsupported),
        };
        Ok(Token {
            kind,
            start,
            end: self.pos,
            comma,
        })
    }

    fn digits(&mut self) -> usize {
        let from = self.pos;
        while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        self.pos - from
    }

    fn number(&mut self) -> Parsed<Tok> {
        let b = self.bytes;
        if b.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        let first = b.get(self.pos).copied();
        let n = self.digits();
        if n == 0 || (first == Some(b'0') && n > 1) {
            return Err(Declined::Syntax);
        }
        let mut kind = Tok::Int;
        if b.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(Declined::Syntax);
            }
            kind = Tok::Float;
        }
        if matches!(b.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(b.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(Declined::Syntax);
            }
            kind = Tok::Float;
        }
        match b.get(self.pos) {
            Some(&c) if c == b'.' || is_name_start(c) => Err(Declined::Syntax),
            _ => Ok(kind),
        }
    }

    /// A quoted string (block strings are declined); its value is decoded later.
    fn string(&mut self) -> Parsed<Tok> {
        let b = self.bytes;
        if b.get(self.pos..self.pos + 3) == Some(b"\"\"\"") {
            return Err(Declined::Unsupported);
        }
        self.pos += 1;
        loop {
            match b.get(self.pos) {
                None | Some(b'\n' | b'\r') => return Err(Declined::Syntax),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(Tok::Str);
                }
                Some(b'\\') => self.pos += 2,
                Some(&c) if c < 0x20 && c != b'\t' => return Err(Declined::Unsupported),
                Some(_) => self.pos += 1,
            }
        }
    }

    /// The value of a quoted string token, escapes resolved.
    fn string_value(&self, t: Token) -> Parsed<String> {
        let raw = self
            .src
            .get(t.start + 1..t.end - 1)
            .ok_or(Declined::Syntax)?;
        if !raw.contains('\\') {
            return Ok(raw.to_owned());
        }
        let mut out = String::with_capacity(raw.len());
        let mut chars = raw.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some('/') => out.push('/'),
                Some('b') => out.push('\u{8}'),
                Some('f') => out.push('\u{c}'),
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some('t') => out.push('\t'),
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    if hex.len() != 4 || !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
                        return Err(Declined::Unsupported);
                    }
                    let code = u32::from_str_radix(&hex, 16).map_err(|_| Declined::Syntax)?;
                    out.push(char::from_u32(code).ok_or(Declined::Unsupported)?);
                }
                _ => return Err(Declined::Syntax),
            }
        }
        Ok(out)
    }

    fn operation(&mut self, operation_type: OperationType) -> Parsed<Definition> {
        let start = self.bump()?.start;
        let name = match self.peek()?.kind {
            Tok::Name => Some(self.name()?),
            _ => None,
        };
        let mut variables = Vec::new();
        if self.eat(b'(')? {
            loop {
                variables.push(self.variable_definition()?);
                if self.eat(b')')? {
                    break;
                }
            }
        }
        let directives = self.directives(false)?;
        let selection_set = self.selection_set()?;
        let op = OperationDefinition {
            operation_type,
            name,
            variables,
            directives,
            selection_set,
        };
        Ok(Definition::OperationDefinition(self.node(op, start)?))
    }

    fn variable_definition(&mut self) -> Parsed<Node<VariableDefinition>> {
        let start = self.expect(b'$')?.start;
        let name = self.name()?;
        self.expect(b':')?;
        let ty_start = self.peek()?.start;
        let ty = self.ty()?;
        let ty = self.node(ty, ty_start)?;
        let default_value = if self.eat(b'=')? {
            Some(self.value(true)?)
        } else {
            None
        };
        let directives = self.directives(true)?;
        let def = VariableDefinition {
            name,
            ty,
            default_value,
            directives,
        };
        self.node(def, start)
    }

    fn ty(&mut self) -> Parsed<Type> {
        if self.eat(b'[')? {
            self.enter()?;
            let inner = self.ty()?;
            self.leave();
            self.expect(b']')?;
            return Ok(if self.eat(b'!')? {
                Type::NonNullList(Box::new(inner))
            } else {
                Type::List(Box::new(inner))
            });
        }
        let name = self.name()?;
        Ok(if self.eat(b'!')? {
            Type::NonNullNamed(name)
        } else {
            Type::Named(name)
        })
    }

    fn fragment(&mut self) -> Parsed<Definition> {
        let start = self.bump()?.start;
        let name = self.name()?;
        if name == "on" {
            return Err(Declined::Syntax);
        }
        let on = self.name()?;
        if on != "on" {
            return Err(Declined::Syntax);
        }
        let type_condition = self.name()?;
        let directives = self.directives(false)?;
        let selection_set = self.selection_set()?;
        let def = FragmentDefinition {
            name,
            type_condition,
            directives,
            selection_set,
        };
        Ok(Definition::FragmentDefinition(self.node(def, start)?))
    }

    fn directives(&mut self, constant: bool) -> Parsed<DirectiveList> {
        let mut list = Vec::new();
        while self.at(b'@')? {
            let start = self.bump()?.start;
            let name = self.name()?;
            let arguments = self.arguments(constant)?;
            list.push(self.node(Directive { name, arguments }, start)?);
        }
        Ok(DirectiveList(list))
    }

    fn arguments(&mut self, constant: bool) -> Parsed<Vec<Node<Argument>>> {
        let mut args = Vec::new();
        if self.eat(b'(')? {
            loop {
                let start = self.peek()?.start;
                let name = self.name()?;
                self.expect(b':')?;
                let value = self.value(constant)?;
                args.push(self.node(Argument { name, value }, start)?);
                if self.eat(b')')? {
                    break;
                }
            }
        }
        Ok(args)
    }

    fn value(&mut self, constant: bool) -> Parsed<Node<Value>> {
        let t = self.bump()?;
        let value = match t.kind {
            Tok::Punct(b'$') if !constant => Value::Variable(self.name()?),
            Tok::Int => Value::Int(IntValue::new_parsed(self.text(t))),
            Tok::Float => Value::Float(FloatValue::new_parsed(self.text(t))),
            Tok::Str => Value::String(self.string_value(t)?),
            Tok::Name => match self.text(t) {
                "true" => Value::Boolean(true),
                "false" => Value::Boolean(false),
                "null" => Value::Null,
                _ => Value::Enum(self.name_of(t)?),
            },
            Tok::Punct(b'[') => {
                self.enter()?;
                let mut items = Vec::new();
                while !self.eat(b']')? {
                    items.push(self.value(constant)?);
                }
                self.leave();
                Value::List(items)
            }
            Tok::Punct(b'{') => {
                self.enter()?;
                let mut fields = Vec::new();
                while !self.eat(b'}')? {
                    let name = self.name()?;
                    self.expect(b':')?;
                    fields.push((name, self.value(constant)?));
                }
                self.leave();
                Value::Object(fields)
            }
            _ => return Err(Declined::Syntax),
        };
        self.node(value, t.start)
    }

    fn selection_set(&mut self) -> Parsed<Vec<Selection>> {
        self.expect(b'{')?;
        self.enter()?;
        let mut set = Vec::new();
        loop {
            set.push(self.selection()?);
            if self.eat(b'}')? {
                break;
            }
        }
        self.leave();
        Ok(set)
    }

    fn selection(&mut self) -> Parsed<Selection> {
        let t = self.bump()?;
        match t.kind {
            Tok::Spread => {
                let next = self.peek()?;
                if next.comma {
                    return Err(Declined::Syntax);
                }
                if next.kind == Tok::Name && self.text(next) != "on" {
                    let fragment_name = self.name()?;
                    let directives = self.directives(false)?;
                    let spread = FragmentSpread {
                        fragment_name,
                        directives,
                    };
                    return Ok(Selection::FragmentSpread(self.node(spread, t.start)?));
                }
                let type_condition = if next.kind == Tok::Name {
                    self.bump()?;
                    Some(self.name()?)
                } else {
                    None
                };
                let directives = self.directives(false)?;
                let selection_set = self.selection_set()?;
                let inline = InlineFragment {
                    type_condition,
                    directives,
                    selection_set,
                };
                Ok(Selection::InlineFragment(self.node(inline, t.start)?))
            }
            Tok::Name => {
                let first = self.name_of(t)?;
                if self.peek()?.comma && self.at(b':')? {
                    return Err(Declined::Syntax);
                }
                let (alias, name) = if self.eat(b':')? {
                    (Some(first), self.name()?)
                } else {
                    (None, first)
                };
                let arguments = self.arguments(false)?;
                let directives = self.directives(false)?;
                let selection_set = if self.at(b'{')? {
                    self.selection_set()?
                } else {
                    Vec::new()
                };
                let field = Field {
                    alias,
                    name,
                    arguments,
                    directives,
                    selection_set,
                };
                Ok(Selection::Field(self.node(field, t.start)?))
            }
            _ => Err(Declined::Syntax),
        }
    }
}
