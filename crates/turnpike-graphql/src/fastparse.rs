//! The fast parser: executable GraphQL documents (operations and fragments) straight
//! into apollo-compiler's AST, without apollo-parser's lossless syntax tree, for
//! apollo-compiler's validation to run on unchanged. It builds the AST apollo-compiler's
//! own parse would (the same nodes, names, values and byte spans), and declines
//! whatever it is not sure of, so that the caller parses that text with apollo-compiler
//! instead: any syntax error, type system definitions, block strings, `\u` escapes of
//! surrogates or in braces, non-ASCII outside strings and comments, and texts near the
//! token or nesting caps (apollo-parser's limits then decide). Declining is always safe; accepting must agree with apollo-compiler, which
//! `fastparse_fuzz.rs` checks differentially. This file owns the grammar; `lex.rs` the
//! tokens.

use apollo_compiler::ast::{
    Argument, Definition, Directive, DirectiveList, Document, Field, FloatValue,
    FragmentDefinition, FragmentSpread, InlineFragment, IntValue, OperationDefinition,
    OperationType, Selection, Type, Value, VariableDefinition,
};
use apollo_compiler::parser::SourceSpan;
use apollo_compiler::{Name, Node};

use crate::spans::Spans;

mod lex;

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
