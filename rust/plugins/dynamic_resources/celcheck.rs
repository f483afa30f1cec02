//! Compile-time checks of a device selector, as cel-go's checker makes them in upstream's
//! DRA environment (`k8s.io/dynamic-resource-allocation/cel`), over the `cel` crate's
//! parsed AST, and cel-go's way of printing compile errors.
//!
//! The `cel` crate parses (the same ANTLR grammar as cel-go) and evaluates, but has no
//! type checker, so an expression cel-go rejects when compiling would only fail when
//! first evaluated, with the crate's words. This module is the part of cel-go's checker
//! that a DRA selector meets, with its messages:
//!
//! * an identifier that is neither `device` nor a comprehension variable:
//!   `undeclared reference to 'x' (in container '')`;
//! * a field of `device` that does not exist: `undefined field 'x'`;
//! * an operator applied to two concrete types that no overload takes, e.g.
//!   `device.driver == 1`: `found no matching overload for '_==_' applied to
//!   '(string, int)'`;
//! * a member function of Kubernetes' quantity, semver, IP, CIDR and URL libraries
//!   that no overload takes (the receiver's, or on an attribute value any that takes the
//!   known arguments): `found no matching overload for 'containsIP' applied to
//!   'net.CIDR.(int)'`, and `sign`, a global function of a quantity, called as a member;
//! * a result whose type is known and is not bool: `must evaluate to bool or the unknown
//!   type, not string` (upstream's own check after compiling).
//!
//! Type names are upstream's (`net.IP`, `net.CIDR`, `kubernetes.URL`,
//! `kubernetes.Quantity`); `net.IP`, `net.CIDR` and cel-go's built-in type names
//! (`int`, `string`...) are values (`type(x) == net.IP`), `kubernetes.*` are not
//! declared as values upstream ("undeclared reference to 'kubernetes'").
//!
//! Types are inferred bottom-up with the declared type of `device`
//! (`kubernetes.DRADevice`: `driver` string, `allowMultipleAllocations` bool,
//! `attributes` map of maps to the unknown attribute type, `capacity` map of maps to
//! `kubernetes.Quantity`) and the result types of the functions the environment
//! declares; a call this module does not know has the dynamic type and is never an
//! error here, so an expression cel-go accepts is never rejected: what this module does
//! not model fails, if at all, when evaluated. Errors are collected in source order as
//! cel-go reports them and printed by [`display`] as `Issues.String()` does:
//! `ERROR: <input>:line:col: message`, the source line and a caret under the column.

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue, SourceInfo};

/// A type as cel-go's checker names it.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    /// The dynamic type (`dyn`): anything goes.
    Dyn,
    /// An attribute value (upstream's `AnyType` with a size): unknown, accepted
    /// as a result.
    Any,
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    Quantity,
    Semver,
    /// Kubernetes' `net.IP`, `net.CIDR` and `kubernetes.URL`.
    Ip,
    Cidr,
    Url,
    /// Kubernetes' `kubernetes.NamedFormat` (the format library).
    Format,
    /// `optional_type(T)`.
    Optional(Box<Ty>),
    Device,
    /// Something already reported: no further errors about it.
    Error,
}

impl Ty {
    pub fn name(&self) -> String {
        match self {
            Ty::Bool => "bool".into(),
            Ty::Int => "int".into(),
            Ty::Uint => "uint".into(),
            Ty::Double => "double".into(),
            Ty::String => "string".into(),
            Ty::Bytes => "bytes".into(),
            Ty::Null => "null_type".into(),
            Ty::Dyn | Ty::Error => "dyn".into(),
            Ty::Any => "any".into(),
            Ty::List(t) => format!("list({})", t.name()),
            Ty::Map(k, v) => format!("map({}, {})", k.name(), v.name()),
            Ty::Quantity => "kubernetes.Quantity".into(),
            Ty::Semver => "kubernetes.Semver".into(),
            Ty::Ip => "net.IP".into(),
            Ty::Cidr => "net.CIDR".into(),
            Ty::Url => "kubernetes.URL".into(),
            Ty::Device => "kubernetes.DRADevice".into(),
            Ty::Format => "kubernetes.NamedFormat".into(),
            Ty::Optional(t) => format!("optional_type({})", t.name()),
        }
    }

    /// Unknown at compile time: every overload may apply.
    fn open(&self) -> bool {
        matches!(self, Ty::Dyn | Ty::Any | Ty::Error)
    }

    fn numeric(&self) -> bool {
        matches!(self, Ty::Int | Ty::Uint | Ty::Double)
    }

    /// One of Kubernetes' library types.
    fn kube(&self) -> bool {
        matches!(
            self,
            Ty::Quantity | Ty::Semver | Ty::Ip | Ty::Cidr | Ty::Url | Ty::Format
        )
    }

    fn primitive(&self) -> bool {
        matches!(
            self,
            Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::String | Ty::Bytes
        )
    }

    /// Known well enough to reject an overload: not dynamic, not an attribute value,
    /// nothing inside that is.
    fn closed(&self) -> bool {
        match self {
            Ty::List(t) | Ty::Optional(t) => t.closed(),
            Ty::Map(k, v) => k.closed() && v.closed(),
            Ty::Dyn | Ty::Any | Ty::Error | Ty::Null => false,
            _ => true,
        }
    }

    /// A type the homogeneous-literal check compares (cel-go's
    /// `HomogeneousAggregateLiterals`): anything but the dynamic type, `null` and what
    /// was already reported. An attribute value counts (`any`).
    fn aggregable(&self) -> bool {
        !matches!(self, Ty::Dyn | Ty::Error | Ty::Null)
            && match self {
                Ty::List(t) => t.aggregable() || **t == Ty::Dyn,
                _ => true,
            }
    }
}

/// The member functions of cel-go's standard library, strings extension (version 2)
/// and Kubernetes' regex library on a string target, with the arguments each overload
/// takes: a call on a string (or on another known type) that matches none is
/// cel-go's "found no matching overload".
const STRING_MEMBERS: &[(&str, &[&[Ty]])] = &[
    ("startsWith", &[&[Ty::String]]),
    ("endsWith", &[&[Ty::String]]),
    ("contains", &[&[Ty::String]]),
    ("matches", &[&[Ty::String]]),
    ("lowerAscii", &[&[]]),
    ("upperAscii", &[&[]]),
    ("trim", &[&[]]),
    ("charAt", &[&[Ty::Int]]),
    ("split", &[&[Ty::String], &[Ty::String, Ty::Int]]),
    (
        "replace",
        &[
            &[Ty::String, Ty::String],
            &[Ty::String, Ty::String, Ty::Int],
        ],
    ),
    ("substring", &[&[Ty::Int], &[Ty::Int, Ty::Int]]),
    ("find", &[&[Ty::String]]),
    ("findAll", &[&[Ty::String], &[Ty::String, Ty::Int]]),
];

/// The member functions of Kubernetes' quantity, semver, IP, CIDR and URL libraries:
/// `(name, receiver, parameters, result)` per overload. A call whose receiver is one of
/// these types, or whose arguments are, and that no overload takes is cel-go's "found
/// no matching overload".
const KUBE_MEMBERS: &[(&str, Ty, &[Ty], Ty)] = &[
    ("isGreaterThan", Ty::Quantity, &[Ty::Quantity], Ty::Bool),
    ("isLessThan", Ty::Quantity, &[Ty::Quantity], Ty::Bool),
    ("compareTo", Ty::Quantity, &[Ty::Quantity], Ty::Int),
    ("asApproximateFloat", Ty::Quantity, &[], Ty::Double),
    ("asInteger", Ty::Quantity, &[], Ty::Int),
    ("isInteger", Ty::Quantity, &[], Ty::Bool),
    ("add", Ty::Quantity, &[Ty::Quantity], Ty::Quantity),
    ("add", Ty::Quantity, &[Ty::Int], Ty::Quantity),
    ("sub", Ty::Quantity, &[Ty::Quantity], Ty::Quantity),
    ("sub", Ty::Quantity, &[Ty::Int], Ty::Quantity),
    ("isGreaterThan", Ty::Semver, &[Ty::Semver], Ty::Bool),
    ("isLessThan", Ty::Semver, &[Ty::Semver], Ty::Bool),
    ("compareTo", Ty::Semver, &[Ty::Semver], Ty::Int),
    ("major", Ty::Semver, &[], Ty::Int),
    ("minor", Ty::Semver, &[], Ty::Int),
    ("patch", Ty::Semver, &[], Ty::Int),
    ("family", Ty::Ip, &[], Ty::Int),
    ("isUnspecified", Ty::Ip, &[], Ty::Bool),
    ("isLoopback", Ty::Ip, &[], Ty::Bool),
    ("isLinkLocalMulticast", Ty::Ip, &[], Ty::Bool),
    ("isLinkLocalUnicast", Ty::Ip, &[], Ty::Bool),
    ("isGlobalUnicast", Ty::Ip, &[], Ty::Bool),
    ("containsIP", Ty::Cidr, &[Ty::Ip], Ty::Bool),
    ("containsIP", Ty::Cidr, &[Ty::String], Ty::Bool),
    ("containsCIDR", Ty::Cidr, &[Ty::Cidr], Ty::Bool),
    ("containsCIDR", Ty::Cidr, &[Ty::String], Ty::Bool),
    ("ip", Ty::Cidr, &[], Ty::Ip),
    ("prefixLength", Ty::Cidr, &[], Ty::Int),
    ("masked", Ty::Cidr, &[], Ty::Cidr),
    ("getScheme", Ty::Url, &[], Ty::String),
    ("getHost", Ty::Url, &[], Ty::String),
    ("getHostname", Ty::Url, &[], Ty::String),
    ("getPort", Ty::Url, &[], Ty::String),
    ("getEscapedPath", Ty::Url, &[], Ty::String),
    ("getQuery", Ty::Url, &[], Ty::String),
];

/// One compile error at an expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Issue {
    pub id: u64,
    pub message: String,
}

struct Checker {
    scopes: Vec<(String, Ty)>,
    issues: Vec<Issue>,
    /// Inside a call whose literals are exempt from the homogeneity check (`format`,
    /// `sets.contains`...), how deep.
    exempt_depth: usize,
    /// The `'<literal>'.format([...])` calls met, for cel-go's string format
    /// validator, which runs once the expression checked without errors.
    formats: Vec<FormatCall>,
}

/// A `format` call on a string literal with a list literal argument (cel-go's
/// `matchConstantFormatStringWithListLiteralArgs`).
struct FormatCall {
    id: u64,
    format: String,
    args: Vec<FormatArg>,
}

/// A format argument: its id, type and, for a list or map literal, its elements (keys
/// and values in order), which a `%s` clause verifies one by one.
struct FormatArg {
    id: u64,
    ty: Ty,
    elements: Vec<FormatArg>,
}

/// cel-go's `stringFormatChecker`: a clause's accepted kinds (the dynamic type always
/// passes).
#[derive(Clone, Copy)]
enum Clause {
    String,
    Decimal,
    Fixed,
    Scientific,
    Binary,
    Hex,
    Octal,
}

impl Clause {
    fn accepts(self, t: &Ty) -> bool {
        if *t == Ty::Dyn {
            return true;
        }
        match self {
            Clause::String => matches!(
                t,
                Ty::List(_)
                    | Ty::Map(..)
                    | Ty::Int
                    | Ty::Uint
                    | Ty::Double
                    | Ty::Bool
                    | Ty::String
                    | Ty::Bytes
                    | Ty::Null
            ),
            Clause::Decimal | Clause::Octal => matches!(t, Ty::Int | Ty::Uint),
            Clause::Fixed | Clause::Scientific => matches!(t, Ty::Double | Ty::String),
            Clause::Binary => matches!(t, Ty::Int | Ty::Uint | Ty::Bool),
            Clause::Hex => matches!(t, Ty::Int | Ty::Uint | Ty::String | Ty::Bytes),
        }
    }

    fn error(self, given: &str) -> String {
        let what = match self {
            Clause::String => "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps",
            Clause::Decimal => "decimal clause can only be used on integers",
            Clause::Fixed => "fixed-point clause can only be used on doubles",
            Clause::Scientific => "scientific clause can only be used on doubles",
            Clause::Binary => "only integers and bools can be formatted as binary",
            Clause::Hex => "only integers, byte buffers, and strings can be formatted as hex",
            Clause::Octal => "octal clause can only be used on integers",
        };
        format!("error during formatting: {what}, was given {given}")
    }
}

/// cel-go's `Type.TypeName()` of a type, as the format validator prints it.
fn type_name(t: &Ty) -> String {
    match t {
        Ty::Any => "google.protobuf.Any".into(),
        Ty::List(_) => "list".into(),
        Ty::Map(..) => "map".into(),
        Ty::Null => "null_type".into(),
        other => other.name(),
    }
}

/// `%s`'s `verifyString`: the argument, then a literal's elements; the id of the
/// first that does not pass.
fn verify_string(arg: &FormatArg) -> Result<(), (u64, String)> {
    if !Clause::String.accepts(&arg.ty) {
        return Err((arg.id, type_name(&arg.ty)));
    }
    arg.elements.iter().try_for_each(verify_string)
}

/// cel-go's `parseFormatString` with the checker's callbacks: Ok(clauses read) or the
/// error and the id it is reported at.
fn validate_format(call: &FormatCall) -> Result<usize, (u64, String)> {
    let f = call.format.as_bytes();
    let (mut i, mut requested) = (0usize, 0usize);
    while i < f.len() {
        if f[i] != b'%' {
            i += 1;
            continue;
        }
        if i + 1 < f.len() && f[i + 1] == b'%' {
            i += 2;
            continue;
        }
        let index = requested;
        requested += 1;
        if i + 1 >= f.len() {
            return Err((call.id, "unexpected end of string".into()));
        }
        if index >= call.args.len() {
            return Err((call.id, format!("index {index} out of range")));
        }
        let clause_err = |m: String| (call.id, format!("could not parse formatting clause: {m}"));
        let mut j = i + 1;
        if f[j] == b'.' {
            j += 1;
            let start = j;
            loop {
                if j >= f.len() {
                    return Err(clause_err(
                        "error while parsing precision: could not find end of precision specifier"
                            .into(),
                    ));
                }
                if !f[j].is_ascii_digit() {
                    break;
                }
                j += 1;
            }
            let digits = &call.format[start..j];
            if digits.parse::<i64>().is_err() {
                return Err(clause_err(format!(
                    "error while parsing precision: error while converting precision to \
                     integer: strconv.Atoi: parsing {}: {}",
                    super::cellib::go_quote(digits),
                    if digits.is_empty() {
                        "invalid syntax"
                    } else {
                        "value out of range"
                    }
                )));
            }
        }
        let clause = match f[j] {
            b's' => Clause::String,
            b'd' => Clause::Decimal,
            b'f' => Clause::Fixed,
            b'e' => Clause::Scientific,
            b'b' => Clause::Binary,
            b'x' | b'X' => Clause::Hex,
            b'o' => Clause::Octal,
            other => {
                return Err(clause_err(format!(
                    "unrecognized formatting clause \"{}\"",
                    char::from(other)
                )))
            }
        };
        let arg = &call.args[index];
        match clause {
            Clause::String => {
                verify_string(arg).map_err(|(id, given)| (id, Clause::String.error(&given)))?
            }
            c if !c.accepts(&arg.ty) => return Err((arg.id, c.error(&type_name(&arg.ty)))),
            _ => {}
        }
        i = j + 1;
    }
    Ok(requested)
}

/// The qualified type names an expression may use as values upstream
/// (`type(x) == net.IP`): the IP and CIDR libraries declare their types with the
/// environment; `kubernetes.Quantity`, `kubernetes.Semver` and `kubernetes.URL` are not
/// (upstream: "undeclared reference to 'kubernetes'").
const DECLARED_TYPES: &[&str] = &["net.IP", "net.CIDR"];

/// cel-go's built-in type identifiers.
const BUILTIN_TYPES: &[&str] = &[
    "bool",
    "bytes",
    "double",
    "int",
    "list",
    "map",
    "null_type",
    "string",
    "type",
    "uint",
];

/// `a.b.c` when `e` is a chain of field selections on an identifier.
fn qualified_name(e: &IdedExpr) -> Option<String> {
    match &e.expr {
        Expr::Ident(name) => Some(name.clone()),
        Expr::Select(sel) if !sel.test => {
            qualified_name(&sel.operand).map(|root| format!("{root}.{}", sel.field))
        }
        _ => None,
    }
}

fn attributes_ty() -> Ty {
    Ty::Map(
        Box::new(Ty::String),
        Box::new(Ty::Map(Box::new(Ty::String), Box::new(Ty::Any))),
    )
}

fn capacity_ty() -> Ty {
    Ty::Map(
        Box::new(Ty::String),
        Box::new(Ty::Map(Box::new(Ty::String), Box::new(Ty::Quantity))),
    )
}

impl Checker {
    fn lookup(&self, name: &str) -> Option<Ty> {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return Some(t.clone());
        }
        (name == "device").then_some(Ty::Device)
    }

    fn report(&mut self, id: u64, message: String) -> Ty {
        self.issues.push(Issue { id, message });
        Ty::Error
    }

    fn check(&mut self, e: &IdedExpr) -> Ty {
        match &e.expr {
            Expr::Literal(l) => match l {
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Bytes(_) => Ty::Bytes,
                LiteralValue::Double(_) => Ty::Double,
                LiteralValue::Int(_) => Ty::Int,
                LiteralValue::String(_) => Ty::String,
                LiteralValue::UInt(_) => Ty::Uint,
                _ => Ty::Null,
            },
            Expr::Ident(name) => match self.lookup(name) {
                Some(t) => t,
                // cel-go's built-in type names are values of type `type`
                None if BUILTIN_TYPES.contains(&name.as_str()) => Ty::Dyn,
                // Variables that macro expansions introduce.
                None if name.starts_with('@') || name.starts_with('#') => Ty::Dyn,
                None => self.report(
                    e.id,
                    format!("undeclared reference to '{name}' (in container '')"),
                ),
            },
            Expr::Select(sel) => {
                // A qualified type name (`net.IP`, `kubernetes.Quantity`), unless its
                // root is a variable: a `type` value, as cel-go resolves it.
                if !sel.test {
                    if let Some(name) = qualified_name(e) {
                        let root = name.split('.').next().unwrap_or_default();
                        if DECLARED_TYPES.contains(&name.as_str()) && self.lookup(root).is_none() {
                            return Ty::Dyn;
                        }
                    }
                }
                let operand = self.check(&sel.operand);
                let field = match &operand {
                    Ty::Device => match sel.field.as_str() {
                        "driver" => Ty::String,
                        "allowMultipleAllocations" => Ty::Bool,
                        "attributes" => attributes_ty(),
                        "capacity" => capacity_ty(),
                        other => return self.report(e.id, format!("undefined field '{other}'")),
                    },
                    Ty::Map(_, v) => (**v).clone(),
                    _ => Ty::Dyn,
                };
                if sel.test {
                    Ty::Bool
                } else {
                    field
                }
            }
            Expr::List(list) => {
                let mut elem: Option<Ty> = None;
                // the first element's type, when the check applies (not dynamic)
                let mut first: Option<Option<Ty>> = None;
                let exempt = self.exempt_depth > 0;
                for el in &list.elements {
                    let t = self.check(el);
                    match &first {
                        None => first = Some(t.aggregable().then(|| t.clone())),
                        Some(Some(f)) if !exempt && t.aggregable() && *f != t => {
                            let message =
                                format!("expected type '{}' but found '{}'", f.name(), t.name());
                            self.report(el.id, message);
                            // one error per literal, at its first stray element
                            first = Some(None);
                        }
                        _ => {}
                    }
                    elem = Some(match elem {
                        None => t,
                        Some(prev) if prev == t => prev,
                        Some(_) => Ty::Dyn,
                    });
                }
                Ty::List(Box::new(elem.unwrap_or(Ty::Dyn)))
            }
            Expr::Map(map) => {
                let (mut key, mut value): (Option<Ty>, Option<Ty>) = (None, None);
                let (mut first_key, mut first_value): (Option<Option<Ty>>, Option<Option<Ty>>) =
                    (None, None);
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        let k = self.check(&me.key);
                        let v = self.check(&me.value);
                        for (first, t, at) in [
                            (&mut first_key, &k, me.key.id),
                            (&mut first_value, &v, me.value.id),
                        ] {
                            match first {
                                None => *first = Some(t.aggregable().then(|| t.clone())),
                                Some(Some(f))
                                    if self.exempt_depth == 0 && t.aggregable() && f != t =>
                                {
                                    let message = format!(
                                        "expected type '{}' but found '{}'",
                                        f.name(),
                                        t.name()
                                    );
                                    self.issues.push(Issue { id: at, message });
                                    *first = Some(None);
                                }
                                _ => {}
                            }
                        }
                        key = Some(match key {
                            Some(p) if p != k => Ty::Dyn,
                            _ => k,
                        });
                        value = Some(match value {
                            Some(p) if p != v => Ty::Dyn,
                            _ => v,
                        });
                    }
                }
                Ty::Map(
                    Box::new(key.unwrap_or(Ty::Dyn)),
                    Box::new(value.unwrap_or(Ty::Dyn)),
                )
            }
            Expr::Struct(st) => {
                for entry in &st.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        self.check(&f.value);
                    }
                }
                Ty::Dyn
            }
            Expr::Comprehension(c) => {
                let range = self.check(&c.iter_range);
                let (first, second) = match &range {
                    Ty::List(t) => (Ty::Int, (**t).clone()),
                    Ty::Map(k, v) => ((**k).clone(), (**v).clone()),
                    _ => (Ty::Dyn, Ty::Dyn),
                };
                let (iter1, iter2) = match &c.iter_var2 {
                    // Two-variable comprehensions: (index, value) or (key, value).
                    Some(_) => (first, Some(second)),
                    None => (
                        match &range {
                            Ty::List(t) => (**t).clone(),
                            Ty::Map(k, _) => (**k).clone(),
                            _ => Ty::Dyn,
                        },
                        None,
                    ),
                };
                let accu = self.check(&c.accu_init);
                let base = self.scopes.len();
                self.scopes.push((c.accu_var.clone(), accu));
                self.scopes.push((c.iter_var.clone(), iter1));
                if let (Some(name), Some(t)) = (&c.iter_var2, iter2) {
                    self.scopes.push((name.clone(), t));
                }
                self.check(&c.loop_cond);
                self.check(&c.loop_step);
                self.scopes.truncate(base + 1);
                let result = self.check(&c.result);
                self.scopes.truncate(base);
                result
            }
            Expr::Call(call) => self.check_call(e.id, call),
            _ => Ty::Dyn,
        }
    }

    /// A format argument's type (checked again, its issues already reported) and, for
    /// a list or map literal, its elements'.
    fn format_arg(&mut self, e: &IdedExpr) -> FormatArg {
        let reported = self.issues.len();
        self.exempt_depth += 1;
        let ty = self.check(e);
        self.exempt_depth -= 1;
        self.issues.truncate(reported);
        let elements = match &e.expr {
            Expr::List(list) => list.elements.iter().map(|x| self.format_arg(x)).collect(),
            Expr::Map(map) => map
                .entries
                .iter()
                .filter_map(|entry| match &entry.expr {
                    EntryExpr::MapEntry(me) => Some([me.key.clone(), me.value.clone()]),
                    EntryExpr::StructField(_) => None,
                })
                .flatten()
                .map(|x| self.format_arg(&x))
                .collect(),
            _ => Vec::new(),
        };
        FormatArg {
            id: e.id,
            ty,
            elements,
        }
    }

    fn check_call(&mut self, id: u64, call: &cel::common::ast::CallExpr) -> Ty {
        let name = call.func_name.as_str();
        // A namespaced function (`sets.contains`, `strings.quote`, `math.greatest`...)
        // parses as a call on an identifier that is no variable.
        let namespaced = matches!(
            call.target.as_deref().map(|t| &t.expr),
            Some(Expr::Ident(ns)) if self.lookup(ns).is_none()
        );
        let target = match (&call.target, namespaced) {
            (Some(t), false) => Some(self.check(t)),
            _ => None,
        };
        // cel-go exempts the literals inside `format` (strings extension) from the
        // homogeneous-literal check
        let exempt = name == "format";
        if exempt {
            self.exempt_depth += 1;
        }
        let args: Vec<Ty> = call.args.iter().map(|a| self.check(a)).collect();
        if exempt {
            self.exempt_depth -= 1;
        }
        if let (Some(target), [arg]) = (call.target.as_deref(), call.args.as_slice()) {
            if let (true, Expr::Literal(LiteralValue::String(f)), Expr::List(list)) =
                (exempt, &target.expr, &arg.expr)
            {
                let args = list.elements.iter().map(|e| self.format_arg(e)).collect();
                self.formats.push(FormatCall {
                    id,
                    format: f.to_string(),
                    args,
                });
            }
        }
        if !namespaced && !is_operator(name) && !KNOWN_FUNCTIONS.contains(&name) {
            let bare = name.rsplit('.').next().unwrap_or(name);
            if !(name.contains('.') && KNOWN_FUNCTIONS.contains(&bare)) {
                return self.report(
                    id,
                    format!("undeclared reference to '{name}' (in container '')"),
                );
            }
        }
        if namespaced {
            let ns = match call.target.as_deref().map(|t| &t.expr) {
                Some(Expr::Ident(ns)) => ns.as_str(),
                _ => "",
            };
            // The namespaces of upstream's libraries (sets, strings.quote, lists.range,
            // cel.bind, optional, ip.isCanonical, format.named); any other is not
            // declared there.
            // The format library: `format.named(string)` and the named formats.
            let format_fn = ns == "format"
                && (name == "named" || super::celformat::FORMATS.iter().any(|(n, _)| *n == name));
            if format_fn && name == "named" {
                if let [a] = args.as_slice() {
                    if a.closed() && *a != Ty::String {
                        return self.report(
                            id,
                            format!(
                                "found no matching overload for 'format.named' applied to '({})'",
                                a.name()
                            ),
                        );
                    }
                }
                return Ty::Optional(Box::new(Ty::Format));
            }
            if format_fn && args.is_empty() {
                return Ty::Format;
            }
            if !matches!(ns, "sets" | "strings" | "lists" | "cel" | "optional" | "ip") && !format_fn
            {
                // cel-go: the namespace is an undeclared identifier, and the function
                // an undeclared one unless some library declares a function of its name
                let target_id = call.target.as_deref().map_or(id, |t| t.id);
                self.report(
                    target_id,
                    format!("undeclared reference to '{ns}' (in container '')"),
                );
                if !KNOWN_FUNCTIONS.contains(&name) {
                    return self.report(
                        id,
                        format!("undeclared reference to '{name}' (in container '')"),
                    );
                }
                return Ty::Error;
            }
            return Ty::Dyn;
        }
        let overload_error = |c: &mut Checker, tys: &[&Ty]| {
            let list: Vec<String> = tys.iter().map(|t| t.name()).collect();
            c.report(
                id,
                format!(
                    "found no matching overload for '{name}' applied to '({})'",
                    list.join(", ")
                ),
            )
        };
        let member_error = |c: &mut Checker, t: &Ty, args: &[Ty]| {
            let list: Vec<String> = args.iter().map(|t| t.name()).collect();
            c.report(
                id,
                format!(
                    "found no matching overload for '{name}' applied to '{}.({})'",
                    t.name(),
                    list.join(", ")
                ),
            )
        };
        if let Some(t) = target.as_ref().filter(|t| **t != Ty::Error) {
            if let Some((_, overloads)) = STRING_MEMBERS.iter().find(|(n, _)| *n == name) {
                // an open type (`dyn`, an attribute's `any`) is assignable to any
                // parameter; the call fails when no overload takes what is known
                let takes = |want: &Ty, got: &Ty| got.open() || want == got;
                let fits = takes(&Ty::String, t)
                    && overloads.iter().any(|o| {
                        o.len() == args.len() && o.iter().zip(&args).all(|(w, g)| takes(w, g))
                    });
                if !fits && !args.contains(&Ty::Error) {
                    return member_error(self, t, &args);
                }
            }
            // cel-go's strings extension has `reverse` from version 3 on; upstream
            // enables version 2, where only the lists extension's `reverse` exists
            if name == "reverse" && t.closed() && !matches!(t, Ty::List(_)) {
                return member_error(self, t, &args);
            }
        }
        // Kubernetes' parsing functions take a string (`semver` and `isSemver` also a
        // normalize flag)
        if target.is_none()
            && matches!(
                name,
                "quantity"
                    | "isQuantity"
                    | "semver"
                    | "isSemver"
                    | "ip"
                    | "isIP"
                    | "cidr"
                    | "isCIDR"
                    | "url"
                    | "isURL"
            )
            && args.first().is_some_and(|a| a.closed() && *a != Ty::String)
        {
            let all: Vec<Ty> = args.clone();
            let refs: Vec<&Ty> = all.iter().collect();
            return overload_error(self, &refs);
        }
        // The format library's `validate` and optional values' `hasValue` / `value`
        match (name, target.as_ref(), args.as_slice()) {
            ("validate", Some(Ty::Format), [a]) => {
                if a.closed() && *a != Ty::String {
                    return member_error(self, &Ty::Format, &args);
                }
                return Ty::Optional(Box::new(Ty::List(Box::new(Ty::String))));
            }
            ("hasValue", Some(Ty::Optional(_)), []) => return Ty::Bool,
            ("value", Some(Ty::Optional(t)), []) => return (**t).clone(),
            _ => {}
        }
        // Kubernetes' member functions: the receiver's overloads, or, on an open
        // receiver, any overload that takes the (known) arguments
        if let Some(t) = target.as_ref().filter(|t| **t != Ty::Error) {
            let overloads: Vec<&(&str, Ty, &[Ty], Ty)> =
                KUBE_MEMBERS.iter().filter(|o| o.0 == name).collect();
            if !overloads.is_empty() && !args.contains(&Ty::Error) {
                let takes = |want: &Ty, got: &Ty| got.open() || want == got;
                let fitting: Vec<&&(&str, Ty, &[Ty], Ty)> = overloads
                    .iter()
                    .filter(|o| {
                        takes(&o.1, t)
                            && o.2.len() == args.len()
                            && o.2.iter().zip(&args).all(|(w, g)| takes(w, g))
                    })
                    .collect();
                let decides = t.kube() || args.iter().any(|a| a.closed() && a.kube());
                if fitting.is_empty() && decides {
                    return member_error(self, t, &args);
                }
                if t.closed() {
                    if let Some(o) = fitting.first() {
                        return o.3.clone();
                    }
                }
            }
        }
        // `sign` is a global function of a quantity (`sign(q)`), not a member
        if name == "sign" {
            if let Some(t) = target.as_ref().filter(|t| t.closed()) {
                return member_error(self, t, &args);
            }
            if let [a] = args.as_slice() {
                if a.closed() && *a != Ty::Quantity {
                    return overload_error(self, &[a]);
                }
                if target.is_none() {
                    return Ty::Int;
                }
            }
        }
        match (name, target.as_ref(), args.as_slice()) {
            ("size", None, [a])
                if a.closed()
                    && !matches!(a, Ty::String | Ty::Bytes | Ty::List(_) | Ty::Map(..)) =>
            {
                overload_error(self, &[a])
            }
            ("size", Some(a), [])
                if a.closed()
                    && !matches!(a, Ty::String | Ty::Bytes | Ty::List(_) | Ty::Map(..)) =>
            {
                member_error(self, a, &[])
            }
            ("sum" | "min" | "max", Some(Ty::List(t)), []) => (**t).clone(),
            ("isSorted", Some(Ty::List(_)), []) => Ty::Bool,
            ("indexOf" | "lastIndexOf", Some(Ty::List(_)), [_]) => Ty::Int,
            ("_==_" | "_!=_", None, [a, b]) => {
                // cross-type numeric comparisons cover `<` and friends, not `==`
                let known = |t: &Ty| t.primitive() || t.kube();
                if known(a) && known(b) && a != b {
                    return overload_error(self, &[a, b]);
                }
                Ty::Bool
            }
            ("_<_" | "_<=_" | "_>_" | "_>=_", None, [a, b]) => {
                let comparable = |t: &Ty| t.primitive() || t.open();
                if !comparable(a) || !comparable(b) {
                    if !a.open() && !b.open() {
                        return overload_error(self, &[a, b]);
                    }
                } else if !(a.open() || b.open() || a == b || (a.numeric() && b.numeric())) {
                    return overload_error(self, &[a, b]);
                }
                Ty::Bool
            }
            ("_&&_" | "_||_", None, [a, b]) => {
                for t in [a, b] {
                    if !t.open() && *t != Ty::Bool {
                        return overload_error(self, &[a, b]);
                    }
                }
                Ty::Bool
            }
            ("!_", None, [a]) => {
                if !a.open() && *a != Ty::Bool {
                    return overload_error(self, &[a]);
                }
                Ty::Bool
            }
            ("-_", None, [a]) => match a {
                Ty::Int | Ty::Double => a.clone(),
                t if t.open() => Ty::Dyn,
                _ => overload_error(self, &[a]),
            },
            ("_+_" | "_-_" | "_*_" | "_/_" | "_%_", None, [a, b]) => {
                if a.open() || b.open() {
                    return Ty::Dyn;
                }
                let ok = match name {
                    "_+_" => {
                        (a == b
                            && matches!(
                                a,
                                Ty::Int | Ty::Uint | Ty::Double | Ty::String | Ty::Bytes
                            ))
                            || matches!((a, b), (Ty::List(_), Ty::List(_)))
                    }
                    "_%_" => a == b && matches!(a, Ty::Int | Ty::Uint),
                    _ => a == b && a.numeric(),
                };
                if !ok {
                    let known = |t: &Ty| t.primitive() || t.kube();
                    if (known(a) && known(b)) || matches!(a, Ty::List(_)) {
                        return overload_error(self, &[a, b]);
                    }
                    return Ty::Dyn;
                }
                if let (Ty::List(x), Ty::List(y)) = (a, b) {
                    return if x == y {
                        a.clone()
                    } else {
                        Ty::List(Box::new(Ty::Dyn))
                    };
                }
                a.clone()
            }
            ("_?_:_", None, [c, x, y]) => {
                if !c.open() && *c != Ty::Bool {
                    return overload_error(self, &[c, x, y]);
                }
                if x == y {
                    x.clone()
                } else {
                    Ty::Dyn
                }
            }
            ("_[_]", None, [container, _]) => match container {
                Ty::List(t) => (**t).clone(),
                Ty::Map(_, v) => (**v).clone(),
                _ => Ty::Dyn,
            },
            ("@in", None, [_, _]) => Ty::Bool,
            ("size", _, _) => Ty::Int,
            ("matches" | "startsWith" | "endsWith" | "contains", Some(_), _) => Ty::Bool,
            ("quantity", None, [_]) => Ty::Quantity,
            ("ip", None, [_]) | ("ip", Some(Ty::Cidr), []) => Ty::Ip,
            ("cidr", None, [_]) | ("masked", Some(Ty::Cidr), []) => Ty::Cidr,
            ("url", None, [_]) => Ty::Url,
            ("semver", None, _) => Ty::Semver,
            ("isQuantity" | "isSemver", None, _) => Ty::Bool,
            (
                "compareTo" | "asInteger" | "major" | "minor" | "patch",
                Some(Ty::Quantity | Ty::Semver),
                _,
            ) => Ty::Int,
            ("isGreaterThan" | "isLessThan" | "isInteger", Some(Ty::Quantity | Ty::Semver), _) => {
                Ty::Bool
            }
            ("add" | "sub", Some(Ty::Quantity), _) => Ty::Quantity,
            ("asApproximateFloat", Some(Ty::Quantity), _) => Ty::Double,
            (
                "lowerAscii" | "upperAscii" | "trim" | "replace" | "substring",
                Some(Ty::String),
                _,
            ) => Ty::String,
            ("indexOf" | "lastIndexOf", Some(Ty::String), _) => Ty::Int,
            ("int", None, [_]) => Ty::Int,
            ("uint", None, [_]) => Ty::Uint,
            ("double", None, [_]) => Ty::Double,
            ("string", None, [_]) => Ty::String,
            ("bool", None, [_]) => Ty::Bool,
            _ => Ty::Dyn,
        }
    }
}

/// Every function name of upstream's environment (cel-go's standard library and the
/// libraries `environment.MustBaseEnvSet` enables for stored expressions, and DRA's
/// `cel.bind`), without namespaces: a call of any other name is an undeclared
/// reference, as cel-go's checker reports it. Operators (`_+_`, `!_`, `@in`...) are
/// not listed.
const KNOWN_FUNCTIONS: &[&str] = &[
    // standard library (and macros, which the parser expands)
    "size",
    "matches",
    "contains",
    "startsWith",
    "endsWith",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "dyn",
    "duration",
    "timestamp",
    "has",
    "all",
    "exists",
    "exists_one",
    "existsOne",
    "map",
    "filter",
    "getFullYear",
    "getMonth",
    "getDayOfYear",
    "getDayOfMonth",
    "getDate",
    "getDayOfWeek",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
    // ext.Strings (version 2)
    "charAt",
    "indexOf",
    "lastIndexOf",
    "lowerAscii",
    "upperAscii",
    "replace",
    "split",
    "substring",
    "trim",
    "join",
    "quote",
    "format",
    // Kubernetes regex, lists, URL, IP, CIDR, format, quantity and semver libraries
    "find",
    "findAll",
    "isSorted",
    "sum",
    "min",
    "max",
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
    "ip",
    "isIP",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
    "isCanonical",
    "cidr",
    "isCIDR",
    "containsIP",
    "containsCIDR",
    "prefixLength",
    "masked",
    "named",
    "validate",
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
    "quantity",
    "isQuantity",
    "sign",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    "add",
    "sub",
    "isInteger",
    "asInteger",
    "asApproximateFloat",
    "semver",
    "isSemver",
    "major",
    "minor",
    "patch",
    // Kubernetes authorizer library (declared, whatever the variables)
    "path",
    "group",
    "serviceAccount",
    "resource",
    "subresource",
    "namespace",
    "name",
    "check",
    "allowed",
    "reason",
    "errored",
    "error",
    "fieldSelector",
    "labelSelector",
    // two-variable comprehensions' map insertion (`cel.@mapInsert`, from the macros)
    "@mapInsert",
    // ext.Sets, ext.Lists (version 3), two-variable comprehensions, optionals, bindings
    "equivalent",
    "intersects",
    "range",
    "slice",
    "flatten",
    "distinct",
    "reverse",
    "sort",
    "sortBy",
    "first",
    "last",
    "transformList",
    "transformMap",
    "transformMapEntry",
    "of",
    "ofNonZeroValue",
    "none",
    "hasValue",
    "value",
    "or",
    "orValue",
    "optMap",
    "optFlatMap",
    "bind",
];

fn is_operator(name: &str) -> bool {
    name.starts_with('_') || name.starts_with('@') || name == "!_" || name == "-_"
}

/// The compile errors of a parsed selector and its result type.
pub fn check(expr: &IdedExpr) -> (Ty, Vec<Issue>) {
    let mut c = Checker {
        exempt_depth: 0,
        scopes: Vec::new(),
        issues: Vec::new(),
        formats: Vec::new(),
    };
    let t = c.check(expr);
    // cel-go runs its AST validators (ext strings' string format validator) only on
    // an expression that checked without errors
    if c.issues.is_empty() {
        for call in &c.formats {
            match validate_format(call) {
                Err((id, message)) => c.issues.push(Issue { id, message }),
                Ok(requested) if call.args.len() > requested => c.issues.push(Issue {
                    id: call.id,
                    message: format!(
                        "too many arguments supplied to string.format (expected {requested}, \
                         got {})",
                        call.args.len()
                    ),
                }),
                Ok(_) => {}
            }
        }
    }
    (t, c.issues)
}

/// Upstream's result check: bool, or the unknown type; an error otherwise.
pub fn result_error(t: &Ty) -> Option<String> {
    match t {
        Ty::Bool | Ty::Any | Ty::Dyn | Ty::Error => None,
        other => Some(format!(
            "must evaluate to bool or the unknown type, not {}",
            other.name()
        )),
    }
}

/// One error as cel-go's `Error.ToDisplayString` prints it: `line` 1-based, `column`
/// 0-based in characters.
pub fn display_one(source: &str, line: usize, column: usize, message: &str) -> String {
    let mut out = format!("ERROR: <input>:{line}:{}: {message}", column + 1);
    if let Some(snippet) = source.split('\n').nth(line.saturating_sub(1)) {
        let snippet = snippet.replace('\t', " ");
        out.push_str("\n | ");
        out.push_str(&snippet);
        out.push_str("\n | ");
        let mut chars = snippet.chars();
        for _ in 0..column {
            match chars.next() {
                Some(ch) if ch.len_utf8() > 1 => out.push('\u{ff0e}'),
                Some(_) => out.push('.'),
                None => break,
            }
        }
        match chars.next() {
            Some(ch) if ch.len_utf8() > 1 => out.push('\u{ff3e}'),
            _ => out.push('^'),
        }
    }
    out
}

/// `(line, column)` of a character offset: line 1-based, column 0-based.
fn location(source: &str, offset: usize) -> (usize, usize) {
    let mut line = 1;
    let mut col = 0;
    for (i, ch) in source.chars().enumerate() {
        if i == offset {
            break;
        }
        if ch == '\n' {
            line += 1;
            col = 0;
        } else {
            col += 1;
        }
    }
    (line, col)
}

/// The checker's issues as cel-go's `Issues.String()`: one display per error, in
/// source order, joined by newlines.
pub fn display(source: &str, info: &SourceInfo, issues: &[Issue]) -> String {
    let mut located: Vec<(usize, usize, &str)> = issues
        .iter()
        .map(|i| {
            let (line, col) = info
                .offset_for(i.id)
                .map(|(start, _)| location(source, start as usize))
                .unwrap_or((1, 0));
            (line, col, i.message.as_str())
        })
        .collect();
    located.sort_by_key(|&(l, c, _)| (l, c));
    located
        .iter()
        .map(|(l, c, m)| display_one(source, *l, *c, m))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_puts_the_caret_under_the_column() {
        assert_eq!(
            display_one("device.x == 1", 1, 6, "undefined field 'x'"),
            "ERROR: <input>:1:7: undefined field 'x'\n | device.x == 1\n | ......^"
        );
    }
}
