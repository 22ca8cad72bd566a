//! The data members of a struct as a CUDA source defines it (`struct S { double x, y; int n[3]; };`
//! or `typedef struct { ... } S;`), read with the same tokenizer as kernel signatures, so that
//! a `CudaStruct` can be compared with the definition the compiler will use.

use super::lexer::{bracket_matches, join, tokenize, TokKind, Token};

/// One data member: its declarator name, its extents and its type's text (`const double*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceMember {
    pub name: String,
    /// The member's type, as C text without the name (`double`, `float*`, `Array2D<double>`).
    pub ctype: String,
    /// Array extents as written (`[3][2]` is `["3", "2"]`).
    pub extents: Vec<String>,
}

/// One definition of the struct in the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StructDefinition {
    /// Plain data members; `skipped` are the member functions, static members and nested
    /// types that were left out (they do not change the layout), as written.
    Members {
        members: Vec<SourceMember>,
        skipped: Vec<String>,
    },
    /// A definition whose layout the reader cannot derive (a base class, `virtual`, a bit
    /// field, `alignas`/`__align__`, a union member); `why` says which.
    Uncheckable { why: String },
}

/// Every definition of the struct `name` in `source`, in source order (comments, literals and
/// preprocessor lines ignored). Forward declarations (`struct S;`) are not definitions.
pub fn struct_definitions(source: &str, name: &str) -> Vec<StructDefinition> {
    let tokens = tokenize(source);
    let matches = bracket_matches(&tokens);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        if t.is_ident("struct") || t.is_ident("class") {
            if let Some(def) = definition_at(&tokens, &matches, i, name) {
                out.push(def);
            }
        }
        i += 1;
    }
    out
}

/// The definition starting at the `struct` keyword at `at`, if it defines `name` (by its tag,
/// or as `typedef struct { ... } name;`).
fn definition_at(
    tokens: &[Token],
    matches: &[Option<usize>],
    at: usize,
    name: &str,
) -> Option<StructDefinition> {
    let mut j = at + 1;
    // attributes such as __align__(16) or alignas(16) before the tag
    let mut aligned = false;
    while let Some(t) = tokens.get(j) {
        if t.is_ident("__align__") || t.is_ident("alignas") || t.is_ident("__attribute__") {
            aligned = true;
            j = matches.get(j + 1).copied().flatten()? + 1;
        } else {
            break;
        }
    }
    let tag = tokens.get(j).filter(|t| t.kind == TokKind::Ident);
    if tag.is_some() {
        j += 1;
    }
    let mut based = false;
    while let Some(t) = tokens.get(j) {
        if t.is_punct("{") || t.is_punct(";") {
            break;
        }
        if t.is_punct(":") {
            based = true;
        }
        if t.is_punct("(") || t.is_punct("}") || t.is_punct(")") {
            return None;
        }
        j += 1;
    }
    let open = j;
    if !tokens.get(open)?.is_punct("{") {
        return None; // a forward declaration or a use (`struct S s;`)
    }
    let close = matches.get(open).copied().flatten()?;
    let by_tag = tag.is_some_and(|t| t.text == name);
    let typedef = at > 0 && tokens.get(at - 1).is_some_and(|t| t.is_ident("typedef"));
    let by_typedef = typedef
        && tokens.get(close + 1).is_some_and(|t| t.is_ident(name))
        && tokens.get(close + 2).is_some_and(|t| t.is_punct(";"));
    if !(by_tag || by_typedef) {
        return None;
    }
    if based {
        return Some(StructDefinition::Uncheckable {
            why: "it derives from a base struct".into(),
        });
    }
    if aligned {
        return Some(StructDefinition::Uncheckable {
            why: "it has an alignment attribute".into(),
        });
    }
    let body = tokens.get(open + 1..close)?;
    let body_matches = bracket_matches(body);
    Some(members_of(body, &body_matches))
}

fn members_of(body: &[Token], matches: &[Option<usize>]) -> StructDefinition {
    let mut members = Vec::new();
    let mut skipped = Vec::new();
    let mut start = 0;
    let mut k = 0;
    while k < body.len() {
        let t = &body[k];
        if t.is_punct("{") {
            // a member function's body or a nested type: skip to its end; a member function
            // ends there, a nested type definition ends at the next `;`
            let Some(end) = matches.get(k).copied().flatten() else {
                return uncheckable("unbalanced braces");
            };
            let head = &body[start..k];
            let is_function = head.iter().any(|t| t.is_punct("("));
            k = end + 1;
            if is_function {
                skipped.push(join(head));
                start = k;
            }
            continue;
        }
        if t.is_punct("(") || t.is_punct("[") {
            k = matches.get(k).copied().flatten().map_or(k + 1, |e| e + 1);
            continue;
        }
        if t.is_punct(";") {
            match member(&body[start..k]) {
                Ok(Some(found)) => members.extend(found),
                Ok(None) => skipped.push(join(&body[start..k])),
                Err(why) => return uncheckable(&why),
            }
            start = k + 1;
        }
        k += 1;
    }
    StructDefinition::Members { members, skipped }
}

fn uncheckable(why: &str) -> StructDefinition {
    StructDefinition::Uncheckable {
        why: why.to_string(),
    }
}

/// The data members of one `...;` of a struct body: `None` for functions, static members and
/// type definitions, none for an empty declaration or access specifiers alone.
fn member(mut tokens: &[Token]) -> Result<Option<Vec<SourceMember>>, String> {
    // access specifiers: `public:` (possibly several)
    while tokens.len() >= 2
        && (tokens[0].is_ident("public")
            || tokens[0].is_ident("private")
            || tokens[0].is_ident("protected"))
        && tokens[1].is_punct(":")
    {
        tokens = &tokens[2..];
    }
    let Some(first) = tokens.first() else {
        return Ok(Some(Vec::new()));
    };
    for skipped in ["static", "using", "typedef", "friend", "template", "enum"] {
        if first.is_ident(skipped) {
            return Ok(None);
        }
    }
    if tokens.iter().any(|t| t.is_ident("virtual")) {
        return Err("it has virtual member functions".into());
    }
    if tokens
        .iter()
        .any(|t| t.is_ident("alignas") || t.is_ident("__align__") || t.is_ident("__attribute__"))
    {
        return Err("a member has an alignment attribute".into());
    }
    if tokens.iter().any(|t| t.is_ident("union")) {
        return Err("it has a union member".into());
    }
    if tokens.iter().any(|t| t.is_punct("(")) {
        return Ok(None); // a member function declaration or a constructor
    }
    if let Some(close) = tokens.iter().rposition(|t| t.is_punct("}")) {
        if close + 1 == tokens.len() {
            return Ok(None); // a nested type definition without a member
        }
        return Err("a member's type is defined in place".into());
    }
    if tokens.iter().any(|t| t.is_punct(":")) {
        return Err("it has a bit field".into());
    }
    // split the declarators at top-level commas (commas inside <> belong to the type)
    let mut parts: Vec<&[Token]> = Vec::new();
    let (mut depth, mut from) = (0i32, 0usize);
    for (i, t) in tokens.iter().enumerate() {
        if t.is_punct("<") {
            depth += 1;
        } else if t.is_punct(">") {
            depth -= 1;
        } else if t.is_punct(",") && depth == 0 {
            parts.push(&tokens[from..i]);
            from = i + 1;
        }
    }
    parts.push(&tokens[from..]);
    let mut out = Vec::new();
    let mut base: Option<Vec<Token>> = None;
    for part in parts {
        // drop a default initialiser (it does not change the layout)
        let part = match part.iter().position(|t| t.is_punct("=")) {
            Some(eq) => &part[..eq],
            None => part,
        };
        // trailing extents
        let mut end = part.len();
        let mut extents = Vec::new();
        while end >= 3 && part[end - 1].is_punct("]") {
            let Some(open) = part[..end - 1].iter().rposition(|t| t.is_punct("[")) else {
                break;
            };
            extents.push(join(&part[open + 1..end - 1]));
            end = open;
        }
        extents.reverse();
        let Some(name_at) = end.checked_sub(1) else {
            return Err("a member without a name".into());
        };
        let name = &part[name_at];
        if name.kind != TokKind::Ident {
            return Err(format!("cannot read the member '{}'", join(part)));
        }
        let before = &part[..name_at];
        let ctype = match &base {
            None => {
                // the first declarator carries the type; its stars stay with the type
                let stars = before.iter().rev().take_while(|t| t.is_punct("*")).count();
                base = Some(before[..before.len() - stars].to_vec());
                join(before)
            }
            Some(b) => {
                let mut t = b.clone();
                t.extend(before.iter().cloned());
                join(&t)
            }
        };
        if ctype.is_empty() {
            return Err(format!("cannot read the member '{}'", join(part)));
        }
        out.push(SourceMember {
            name: name.text.clone(),
            ctype,
            extents,
        });
    }
    Ok(Some(out))
}
