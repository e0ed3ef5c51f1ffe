//! Go's `json.Unmarshal` errors for a JSON document read into `map[string]interface{}`,
//! word for word: kube-apiserver puts them in validation messages (a
//! `kubernetes.io/dockerconfigjson` Secret's data), and clients show them as they come.
//! A byte scanner with an explicit stack (no recursion, whatever the nesting).

const EOF: &str = "unexpected end of JSON input";

/// Why Go would refuse `data` as a JSON object (`null` is accepted, as Go accepts it).
pub fn object_error(data: &[u8]) -> Option<String> {
    if let Err(e) = check_syntax(data) {
        return Some(e);
    }
    let first = data.iter().find(|b| !is_space(**b))?;
    let kind = match first {
        b'{' | b'n' => return None,
        b'[' => "array",
        b'"' => "string",
        b't' | b'f' => "bool",
        _ => "number",
    };
    Some(format!(
        "json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
    ))
}

#[derive(Clone, Copy)]
enum Container {
    Object,
    Array,
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// Go's `invalid character 'x' <context>`.
fn invalid(c: u8, context: &str) -> String {
    let shown = match c {
        b'\'' => "'\\''".to_string(),
        b'"' => "'\"'".to_string(),
        0x20..=0x7e => format!("'{}'", c as char),
        b'\n' => "'\\n'".into(),
        b'\r' => "'\\r'".into(),
        b'\t' => "'\\t'".into(),
        0x80..=0x9f => format!("'\\u{c:04x}'"),
        0xa0..=0xff => format!("'{}'", char::from(c)),
        _ => format!("'\\x{c:02x}'"),
    };
    format!("invalid character {shown} {context}")
}

struct Scanner<'a> {
    data: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.data.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(is_space) {
            self.at += 1;
        }
    }

    /// The next byte, which must be there.
    fn next_some(&self) -> Result<u8, String> {
        self.peek().ok_or_else(|| EOF.to_string())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
    }

    fn digit(&mut self, context: &str) -> Result<(), String> {
        match self.next_some()? {
            c if c.is_ascii_digit() => Ok(()),
            c => Err(invalid(c, context)),
        }
    }

    fn number(&mut self) -> Result<(), String> {
        if self.peek() == Some(b'-') {
            self.at += 1;
            self.digit("in numeric literal")?;
        }
        if self.peek() == Some(b'0') {
            self.at += 1;
        } else {
            self.digits();
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.digit("after decimal point in numeric literal")?;
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.digit("in exponent of numeric literal")?;
            self.digits();
        }
        Ok(())
    }

    fn string(&mut self) -> Result<(), String> {
        self.at += 1;
        loop {
            let c = self.next_some()?;
            self.at += 1;
            match c {
                b'"' => return Ok(()),
                b'\\' => match self.next_some()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 1,
                    b'u' => {
                        self.at += 1;
                        for _ in 0..4 {
                            match self.next_some()? {
                                h if h.is_ascii_hexdigit() => self.at += 1,
                                h => return Err(invalid(h, "in \\u hexadecimal character escape")),
                            }
                        }
                    }
                    e => return Err(invalid(e, "in string escape code")),
                },
                c if c < 0x20 => return Err(invalid(c, "in string literal")),
                _ => {}
            }
        }
    }

    fn literal(&mut self, word: &str) -> Result<(), String> {
        self.at += 1;
        for expected in word.bytes().skip(1) {
            match self.next_some()? {
                c if c == expected => self.at += 1,
                c => {
                    let context = format!("in literal {word} (expecting '{}')", expected as char);
                    return Err(invalid(c, &context));
                }
            }
        }
        Ok(())
    }

    /// An object key and its colon.
    fn key(&mut self) -> Result<(), String> {
        self.skip_space();
        match self.next_some()? {
            b'"' => self.string()?,
            c => return Err(invalid(c, "looking for beginning of object key string")),
        }
        self.skip_space();
        match self.next_some()? {
            b':' => {
                self.at += 1;
                Ok(())
            }
            c => Err(invalid(c, "after object key")),
        }
    }
}

fn check_syntax(data: &[u8]) -> Result<(), String> {
    let mut s = Scanner { data, at: 0 };
    let mut open: Vec<Container> = Vec::new();
    'value: loop {
        s.skip_space();
        match s.next_some()? {
            b'{' => {
                s.at += 1;
                s.skip_space();
                if s.peek() == Some(b'}') {
                    s.at += 1;
                } else {
                    s.key()?;
                    open.push(Container::Object);
                    continue 'value;
                }
            }
            b'[' => {
                s.at += 1;
                s.skip_space();
                if s.peek() == Some(b']') {
                    s.at += 1;
                } else {
                    open.push(Container::Array);
                    continue 'value;
                }
            }
            b'"' => s.string()?,
            b'-' | b'0'..=b'9' => s.number()?,
            b't' => s.literal("true")?,
            b'f' => s.literal("false")?,
            b'n' => s.literal("null")?,
            c => return Err(invalid(c, "looking for beginning of value")),
        }
        // A value ended: what may follow depends on where it is.
        loop {
            s.skip_space();
            let Some(container) = open.last().copied() else {
                return match s.peek() {
                    None => Ok(()),
                    Some(c) => Err(invalid(c, "after top-level value")),
                };
            };
            let (close, context) = match container {
                Container::Array => (b']', "after array element"),
                Container::Object => (b'}', "after object key:value pair"),
            };
            match s.next_some()? {
                b',' => {
                    s.at += 1;
                    if let Container::Object = container {
                        s.key()?;
                    }
                    continue 'value;
                }
                c if c == close => {
                    s.at += 1;
                    open.pop();
                }
                c => return Err(invalid(c, context)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str) -> Option<String> {
        object_error(s.as_bytes())
    }

    #[test]
    fn objects_and_null_are_accepted() {
        for ok in [
            "{}",
            " {\"auths\": {\"r\": {\"auth\": \"eDp5\"}}} ",
            "null",
            "{\"a\": [1, -2.5e+3, true, false, null, \"\\u00e9\\n\"]}",
        ] {
            assert_eq!(err(ok), None, "{ok}");
        }
    }

    #[test]
    fn errors_are_worded_as_gos() {
        let cases = [
            (
                "not json",
                "invalid character 'o' in literal null (expecting 'u')",
            ),
            ("", "unexpected end of JSON input"),
            ("{\"a\":", "unexpected end of JSON input"),
            ("x", "invalid character 'x' looking for beginning of value"),
            (
                "{a}",
                "invalid character 'a' looking for beginning of object key string",
            ),
            ("{\"a\" 1}", "invalid character '1' after object key"),
            (
                "{\"a\":1 \"b\"}",
                "invalid character '\"' after object key:value pair",
            ),
            (
                "{\"a\":1,}",
                "invalid character '}' looking for beginning of object key string",
            ),
            ("[1 2]", "invalid character '2' after array element"),
            ("{} x", "invalid character 'x' after top-level value"),
            ("-x", "invalid character 'x' in numeric literal"),
            (
                "1.e",
                "invalid character 'e' after decimal point in numeric literal",
            ),
            ("1e+", "unexpected end of JSON input"),
            ("\"\\q\"", "invalid character 'q' in string escape code"),
            ("\"a\nb\"", "invalid character '\\n' in string literal"),
            (
                "[]",
                "json: cannot unmarshal array into Go value of type map[string]interface {}",
            ),
            (
                "\"s\"",
                "json: cannot unmarshal string into Go value of type map[string]interface {}",
            ),
            (
                "12",
                "json: cannot unmarshal number into Go value of type map[string]interface {}",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(err(input).as_deref(), Some(want), "{input:?}");
        }
    }

    #[test]
    fn deep_nesting_does_not_overflow_the_stack() {
        let deep = "[".repeat(1_000_000);
        assert_eq!(err(&deep).as_deref(), Some(EOF));
    }
}
