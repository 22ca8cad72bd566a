//! A minimal JSON reader for the syntax tree the Python side dumps with `json.dumps` (no
//! dependency for one well-formed, machine-written input).

use std::collections::BTreeMap;

/// A JSON value. Numbers keep their text so an integer literal stays an integer.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    List(Vec<Json>),
    Obj(BTreeMap<String, Json>),
}

impl Json {
    /// The member `key` of an object (`Null` when absent or not an object).
    pub fn get(&self, key: &str) -> &Json {
        static NULL: Json = Json::Null;
        match self {
            Json::Obj(m) => m.get(key).unwrap_or(&NULL),
            _ => &NULL,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_list(&self) -> &[Json] {
        match self {
            Json::List(v) => v,
            _ => &[],
        }
    }

    /// The syntax node's class name (`_t`), "" for anything else.
    pub fn kind(&self) -> &str {
        self.get("_t").as_str().unwrap_or("")
    }

    /// The node's source line (`_line`), 0 when unknown.
    pub fn line(&self) -> u32 {
        match self.get("_line") {
            Json::Num(n) => n.parse().unwrap_or(0),
            _ => 0,
        }
    }
}

/// The identifier of a `Name` node (`x` in `x + 1`), None for any other node.
pub(crate) fn name_of(e: &Json) -> Option<&str> {
    if e.kind() == "Name" {
        e.get("id").as_str()
    } else {
        None
    }
}

/// The value of an integer literal, negated ones included (`-1`), None for anything else.
pub(crate) fn const_int(e: &Json) -> Option<i64> {
    match (e.kind(), e.get("value")) {
        ("Constant", Json::Num(n)) => n.parse().ok(),
        ("UnaryOp", _) if e.get("op").kind() == "USub" => const_int(e.get("operand")).map(|v| -v),
        _ => None,
    }
}

/// Whether two expressions are the same syntax (their source lines aside).
pub(crate) fn same_expr(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Obj(x), Json::Obj(y)) => {
            let keys = |m: &BTreeMap<String, Json>| -> Vec<String> {
                m.keys().filter(|k| *k != "_line").cloned().collect()
            };
            keys(x) == keys(y)
                && keys(x)
                    .iter()
                    .all(|k| same_expr(&x[k.as_str()], &y[k.as_str()]))
        }
        (Json::List(x), Json::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(u, v)| same_expr(u, v))
        }
        _ => a == b,
    }
}

/// Whether `e` is the whole-axis slice `:` (no start, stop or step).
pub(crate) fn is_whole_slice(e: &Json) -> bool {
    e.kind() == "Slice"
        && ["lower", "upper", "step"]
            .iter()
            .all(|f| matches!(e.get(f), Json::Null))
}

/// Parses `text` as one JSON value; the error says at which byte it stopped.
pub fn parse(text: &str) -> Result<Json, String> {
    let mut p = Reader {
        s: text.as_bytes(),
        i: 0,
    };
    let v = p.value()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(format!("trailing characters at byte {}", p.i));
    }
    Ok(v)
}

struct Reader<'a> {
    s: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at byte {}", c as char, self.i))
        }
    }

    fn word(&mut self, w: &str) -> bool {
        if self.s[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Result<Json, String> {
        self.ws();
        match self.peek() {
            Some(b'{') => {
                self.i += 1;
                let mut m = BTreeMap::new();
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Ok(Json::Obj(m));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    self.expect(b':')?;
                    let v = self.value()?;
                    m.insert(k, v);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Json::Obj(m));
                        }
                        _ => return Err(format!("expected ',' or '}}' at byte {}", self.i)),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut v = Vec::new();
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Ok(Json::List(v));
                }
                loop {
                    v.push(self.value()?);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Json::List(v));
                        }
                        _ => return Err(format!("expected ',' or ']' at byte {}", self.i)),
                    }
                }
            }
            Some(b'"') => Ok(Json::Str(self.string()?)),
            _ => {
                if self.word("null") {
                    return Ok(Json::Null);
                }
                if self.word("true") {
                    return Ok(Json::Bool(true));
                }
                if self.word("false") {
                    return Ok(Json::Bool(false));
                }
                for w in ["Infinity", "-Infinity", "NaN"] {
                    if self.word(w) {
                        return Ok(Json::Num(w.to_string()));
                    }
                }
                let start = self.i;
                while let Some(c) = self.peek() {
                    if c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E') {
                        self.i += 1;
                    } else {
                        break;
                    }
                }
                if start == self.i {
                    return Err(format!("unexpected character at byte {}", self.i));
                }
                Ok(Json::Num(
                    String::from_utf8_lossy(&self.s[start..self.i]).into_owned(),
                ))
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.expect(b'"')?;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let c = self.peek().ok_or("unterminated string")?;
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = self.peek().ok_or("unterminated escape")?;
                    self.i += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'u' => {
                            let hex = self.s.get(self.i..self.i + 4).ok_or("short \\u escape")?;
                            let code = u32::from_str_radix(&String::from_utf8_lossy(hex), 16)
                                .map_err(|e| e.to_string())?;
                            self.i += 4;
                            let ch = char::from_u32(code).unwrap_or('\u{fffd}');
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        other => out.push(other),
                    }
                }
                other => out.push(other),
            }
        }
        String::from_utf8(out).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_nested_values() {
        let v =
            parse(r#"{"_t": "Name", "id": "x\u00e9", "n": [1, 2.5, -3e2, true, null]}"#).unwrap();
        assert_eq!(v.kind(), "Name");
        assert_eq!(v.get("id").as_str(), Some("xé"));
        assert_eq!(v.get("n").as_list()[1], Json::Num("2.5".into()));
        assert_eq!(v.get("n").as_list()[3], Json::Bool(true));
        assert!(parse("[1, 2").is_err());
    }
}
