//! Input checks done before any parsing: size, binary content, UTF-8.

/// Why a file could not be parsed. Every variant reads as a skip reason a user can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The extension is not one Sextant parses.
    #[error(
        "unsupported file type: {path} (Sextant parses .ts .tsx .js .jsx .mts .mjs .cts .cjs .py .pyi .go .rs .java, and scripts with a python or node shebang)"
    )]
    UnsupportedExtension {
        /// The offending path.
        path: String,
    },
    /// The file is larger than the configured limit.
    #[error(
        "file is {size} bytes, over the parse limit of {limit} bytes (raise max_file_bytes to index it)"
    )]
    TooLarge {
        /// File size in bytes.
        size: usize,
        /// The configured limit.
        limit: usize,
    },
    /// The file looks binary (contains NUL bytes).
    #[error("file looks binary (NUL byte at offset {offset}); not source code")]
    Binary {
        /// Offset of the first NUL byte.
        offset: usize,
    },
    /// The file is not valid UTF-8.
    #[error(
        "file is not valid UTF-8 (first bad byte at offset {offset}); re-encode it as UTF-8 to index it"
    )]
    InvalidUtf8 {
        /// Offset of the first invalid byte.
        offset: usize,
    },
    /// The grammar could not be loaded (a build problem, not an input problem).
    #[error("cannot load the {language} grammar: {message}")]
    Grammar {
        /// Language id.
        language: &'static str,
        /// What tree-sitter said.
        message: String,
    },
    /// tree-sitter gave up on the input.
    #[error("the parser gave up on this file")]
    ParserFailed,
}

/// Limits applied to input before parsing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ParseLimits {
    /// Largest file, in bytes, the parser accepts (default 16 MiB).
    pub max_file_bytes: usize,
}

impl Default for ParseLimits {
    fn default() -> Self {
        Self {
            max_file_bytes: 16 * 1024 * 1024,
        }
    }
}

/// Validates raw bytes and returns them as text: rejects over-size, binary and non-UTF-8
/// input with a [`ParseError`] explaining why. A leading UTF-8 byte-order mark is kept (it
/// is part of the file and tree-sitter ignores it).
pub fn check_input<'a>(bytes: &'a [u8], limits: &ParseLimits) -> Result<&'a str, ParseError> {
    if bytes.len() > limits.max_file_bytes {
        return Err(ParseError::TooLarge {
            size: bytes.len(),
            limit: limits.max_file_bytes,
        });
    }
    if let Some(offset) = bytes.iter().position(|&b| b == 0) {
        return Err(ParseError::Binary { offset });
    }
    std::str::from_utf8(bytes).map_err(|e| ParseError::InvalidUtf8 {
        offset: e.valid_up_to(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_binary_invalid_and_large_input() {
        let limits = ParseLimits { max_file_bytes: 8 };
        assert_eq!(check_input(b"abc", &limits), Ok("abc"));
        assert_eq!(
            check_input(b"a\0c", &limits),
            Err(ParseError::Binary { offset: 1 })
        );
        assert_eq!(
            check_input(b"ab\xffc", &limits),
            Err(ParseError::InvalidUtf8 { offset: 2 })
        );
        assert_eq!(
            check_input(b"123456789", &limits),
            Err(ParseError::TooLarge { size: 9, limit: 8 })
        );
    }
}
