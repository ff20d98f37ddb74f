//! The line lexer of the IR text parser: a cursor over one line with the token
//! readers (words, numbers, strings, value references, attribute records) and
//! positions for error messages.

use crate::attr::{AVal, AttrError, Rec};
use crate::parse_error::{ParseError, ParseErrorKind};
use crate::text::is_bare_char;

/// Deepest nesting of attribute values accepted (records inside records...).
const MAX_DEPTH: usize = 32;

/// Where something was written, for errors after the line was parsed.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Loc {
    pub line: usize,
    pub col: usize,
}

impl Loc {
    pub fn err<T>(self, kind: ParseErrorKind) -> Result<T, ParseError> {
        Err(ParseError {
            line: self.line,
            col: self.col,
            node: None,
            kind,
        })
    }
}

/// A value reference `%name:port` and where it was written.
pub(crate) struct Ref {
    pub name: String,
    pub port: u16,
    pub loc: Loc,
}

/// A cursor over one line (byte offsets; columns are reported in characters).
pub(crate) struct Cur<'a> {
    pub s: &'a str,
    pub pos: usize,
    pub line: usize,
}

impl<'a> Cur<'a> {
    pub fn at(&self, pos: usize) -> Loc {
        let col = self.s.get(..pos).map_or(pos, |p| p.chars().count()) + 1;
        Loc {
            line: self.line,
            col,
        }
    }

    pub fn loc(&self) -> Loc {
        self.at(self.pos)
    }

    pub fn here_err<T>(&self, kind: ParseErrorKind) -> Result<T, ParseError> {
        self.loc().err(kind)
    }

    pub fn decode_err(&self, e: AttrError) -> ParseError {
        let l = self.at(e.pos);
        ParseError {
            line: l.line,
            col: l.col,
            node: None,
            kind: ParseErrorKind::Attr(e.kind),
        }
    }

    pub fn peek(&self) -> Option<char> {
        self.s.get(self.pos..).and_then(|r| r.chars().next())
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }

    pub fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += self.peek().map_or(1, char::len_utf8);
        }
    }

    pub fn eat(&mut self, ch: char) -> bool {
        self.skip_ws();
        if self.peek() == Some(ch) {
            self.pos += ch.len_utf8();
            true
        } else {
            false
        }
    }

    pub fn expect(&mut self, ch: char) -> Result<(), ParseError> {
        if self.eat(ch) {
            return Ok(());
        }
        let found = self
            .peek()
            .map_or("the end of the line".to_string(), |f| format!("'{f}'"));
        self.here_err(ParseErrorKind::Expected {
            what: format!("'{ch}'"),
            found: Some(found),
        })
    }

    pub fn expect_str(&mut self, s: &str) -> Result<(), ParseError> {
        self.skip_ws();
        if self.s.get(self.pos..).is_some_and(|r| r.starts_with(s)) {
            self.pos += s.len();
            return Ok(());
        }
        self.here_err(ParseErrorKind::expected(&format!("'{s}'")))
    }

    /// Nothing but whitespace may follow a statement.
    pub fn end(&mut self) -> Result<(), ParseError> {
        self.skip_ws();
        if self.at_end() {
            Ok(())
        } else {
            self.here_err(ParseErrorKind::TrailingText)
        }
    }

    pub fn take_while(&mut self, f: impl Fn(char) -> bool) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(&f) {
            self.pos += self.peek().map_or(1, char::len_utf8);
        }
        &self.s[start..self.pos]
    }

    /// A word: a letter or `_`, then letters, digits, `_` and `.`.
    pub fn word(&mut self) -> Result<String, ParseError> {
        self.skip_ws();
        if !self
            .peek()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        {
            return self.here_err(ParseErrorKind::expected("a word"));
        }
        Ok(self
            .take_while(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            .to_string())
    }

    /// A number token (sign, digits, `.`, exponent, `inf`).
    pub fn number_token(&mut self) -> &'a str {
        self.take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | '_'))
    }

    /// A double-quoted string with escapes.
    pub fn string(&mut self) -> Result<String, ParseError> {
        self.skip_ws();
        if self.peek() != Some('"') {
            return self.here_err(ParseErrorKind::expected("a double-quoted string"));
        }
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(ch) = self.peek() else {
                return self.here_err(ParseErrorKind::Unterminated("string"));
            };
            self.pos += ch.len_utf8();
            match ch {
                '"' => return Ok(out),
                '\\' => out.push(self.escape()?),
                c => out.push(c),
            }
        }
    }

    /// The character after a backslash (errors point at the backslash).
    pub fn escape(&mut self) -> Result<char, ParseError> {
        let at = self.at(self.pos.saturating_sub(1));
        let Some(ch) = self.peek() else {
            return at.err(ParseErrorKind::Unterminated("escape"));
        };
        self.pos += ch.len_utf8();
        Ok(match ch {
            '"' => '"',
            '\\' => '\\',
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'u' => {
                if self.peek() != Some('{') {
                    return at.err(ParseErrorKind::expected("\\u{hex}"));
                }
                self.pos += 1;
                let hex = self.take_while(|c| c.is_ascii_hexdigit());
                let c = u32::from_str_radix(hex, 16).ok().and_then(char::from_u32);
                if self.peek() != Some('}') || c.is_none() {
                    return at.err(ParseErrorKind::InvalidUnicodeEscape);
                }
                self.pos += 1;
                c.unwrap_or('\0')
            }
            c => return at.err(ParseErrorKind::UnknownEscape(c)),
        })
    }

    /// `%name` or `%name:port`.
    pub fn value_ref(&mut self) -> Result<Ref, ParseError> {
        self.skip_ws();
        let loc = self.loc();
        if self.peek() != Some('%') {
            return self.here_err(ParseErrorKind::expected("a value (%name)"));
        }
        self.pos += 1;
        let name = if self.peek() == Some('"') {
            self.string()?
        } else {
            let n = self.take_while(is_bare_char);
            if n.is_empty() {
                return self.here_err(ParseErrorKind::expected("a name after '%'"));
            }
            n.to_string()
        };
        let mut port = 0;
        if self.peek() == Some(':') {
            self.pos += 1;
            let at = self.loc();
            let p = self.take_while(|c| c.is_ascii_digit());
            port = p
                .parse::<u16>()
                .map_or_else(|_| at.err(ParseErrorKind::BadPort(p.to_string())), Ok)?;
        }
        Ok(Ref { name, port, loc })
    }

    /// `{key=value, ...}`.
    pub fn record(&mut self, depth: usize) -> Result<Rec, ParseError> {
        if depth > MAX_DEPTH {
            return self.here_err(ParseErrorKind::TooDeep);
        }
        self.skip_ws();
        let pos = self.pos;
        self.expect('{')?;
        let mut entries: Vec<(String, usize, AVal)> = Vec::new();
        if self.eat('}') {
            return Ok(Rec { pos, entries });
        }
        loop {
            self.skip_ws();
            let kpos = self.pos;
            let key = self.word()?;
            if entries.iter().any(|(k, _, _)| *k == key) {
                return self.at(kpos).err(ParseErrorKind::AttrTwice(key));
            }
            self.expect('=')?;
            let v = self.value(depth + 1)?;
            entries.push((key, kpos, v));
            if self.eat('}') {
                return Ok(Rec { pos, entries });
            }
            self.expect(',')?;
        }
    }

    /// A number, a word, a tagged record `word{...}` or a list `[...]`.
    pub fn value(&mut self, depth: usize) -> Result<AVal, ParseError> {
        if depth > MAX_DEPTH {
            return self.here_err(ParseErrorKind::TooDeep);
        }
        self.skip_ws();
        let pos = self.pos;
        match self.peek() {
            Some('[') => {
                self.pos += 1;
                let mut items = Vec::new();
                if self.eat(']') {
                    return Ok(AVal::List(items, pos));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.eat(']') {
                        return Ok(AVal::List(items, pos));
                    }
                    self.expect(',')?;
                }
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let w = self.word()?;
                let mut rec = if self.peek() == Some('{') {
                    self.record(depth + 1)?
                } else {
                    Rec::default()
                };
                rec.pos = pos;
                Ok(AVal::Word(w, rec))
            }
            Some(c) if c.is_ascii_digit() || matches!(c, '-' | '+' | '.') => {
                Ok(AVal::Num(self.number_token().to_string(), pos))
            }
            _ => self.here_err(ParseErrorKind::expected(
                "a value (number, word, record or list)",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_characters() {
        let c = Cur {
            s: "%\"é\" = x",
            pos: 5,
            line: 3,
        };
        let l = c.loc();
        assert_eq!((l.line, l.col), (3, 5));
    }

    #[test]
    fn hex_rejects_partial_elements() {
        let e = crate::parse("graph \"g\"\nconst #0 f32[1] = hex:0000803\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("hex digits"), "{e}");
    }
}
