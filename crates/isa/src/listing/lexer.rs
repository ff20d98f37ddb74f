//! Splits one listing line into `key=value` words with their columns.

/// One word of a line. `col` is 1-based (characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub col: usize,
    /// Text before the first `=`, or the whole word.
    pub key: String,
    /// Text after the first `=` (quotes kept), if any.
    pub value: Option<String>,
    /// Column of the value.
    pub value_col: usize,
}

/// Splits `line` at whitespace outside double quotes; `;` outside quotes starts a comment.
pub fn words(line: &str) -> Result<Vec<Word>, (usize, String)> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_whitespace() {
            i += 1;
            continue;
        }
        if chars[i] == ';' {
            break;
        }
        let start = i;
        let mut in_quote = false;
        while i < chars.len() {
            let c = chars[i];
            if in_quote {
                if c == '\\' {
                    i += 1;
                } else if c == '"' {
                    in_quote = false;
                }
            } else if c.is_whitespace() || c == ';' {
                break;
            } else if c == '"' {
                in_quote = true;
            }
            i += 1;
        }
        if in_quote {
            return Err((start + 1, "unterminated string".into()));
        }
        let text: String = chars[start..i.min(chars.len())].iter().collect();
        out.push(split(text, start + 1));
    }
    Ok(out)
}

fn split(text: String, col: usize) -> Word {
    match text.find('=') {
        Some(p) if !text[..p].contains('"') => Word {
            col,
            key: text[..p].to_string(),
            value_col: col + text[..p].chars().count() + 1,
            value: Some(text[p + 1..].to_string()),
        },
        _ => Word {
            col,
            key: text,
            value: None,
            value_col: col,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_words_and_comments() {
        let w = words("  CONV in_addr=0x10 name=\"a b;c\" ; comment x=1").unwrap();
        assert_eq!(w.len(), 3);
        assert_eq!(w[0].key, "CONV");
        assert_eq!(w[0].col, 3);
        assert_eq!(w[1].key, "in_addr");
        assert_eq!(w[1].value.as_deref(), Some("0x10"));
        assert_eq!(w[1].value_col, 16);
        assert_eq!(w[2].value.as_deref(), Some("\"a b;c\""));
        assert!(words("x=\"open").is_err());
    }
}
