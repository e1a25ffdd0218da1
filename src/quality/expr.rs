//! A small, safe arithmetic evaluator for the `EXPR:` lines verifier models write, so the repair
//! stage can recompute an answer itself instead of trusting the model's arithmetic.
//!
//! Grammar (whitespace is free between tokens):
//!
//! ```text
//! expression := term (('+' | '-' | '−') term)*
//! term       := signed (('*' | '×' | '·' | '/' | '÷') signed)*
//! signed     := ('+' | '-' | '−')* power
//! power      := primary ('^' signed-primary)*      right-associative, binds tighter than a
//!                                                  leading sign: -2^2 = -4, 2^-1 = 0.5
//! primary    := number ['%'] | '(' expression ')' | function '(' expression (',' expression)* ')'
//! number     := digits ['.' digits] | '.' digits   a trailing '%' divides by 100
//! function   := min | max | round                  (ASCII case-insensitive)
//! ```
//!
//! Thousands separators are NOT accepted inside numbers: a comma only separates function
//! arguments, so `1,234` is an error and `min(1,234)` has two arguments. Scientific notation,
//! identifiers, `=` and anything else are errors too. Inputs are bounded (length and parenthesis
//! nesting) so hostile text cannot exhaust the stack; signs and `^` chains are evaluated
//! iteratively.

use thiserror::Error;

/// Longest expression, in characters, that `eval` accepts.
pub const MAX_INPUT_CHARS: usize = 4096;
/// Deepest nesting of parentheses (including function-call parentheses) that `eval` accepts.
pub const MAX_NESTING: usize = 64;
/// `round(x, digits)` accepts whole `digits` in `-MAX_ROUND_DIGITS..=MAX_ROUND_DIGITS`.
const MAX_ROUND_DIGITS: f64 = 15.0;
/// At or beyond this magnitude every f64 is a whole number, so rounding cannot change it.
const WHOLE_NUMBERS_FROM: f64 = 4_503_599_627_370_496.0; // 2^52

#[derive(Debug, Clone, PartialEq, Error)]
pub enum ExprError {
    #[error("the expression is empty")]
    Empty,
    #[error("the expression is {len} characters long; the limit is {MAX_INPUT_CHARS}")]
    TooLong { len: usize },
    #[error("parentheses nest deeper than {MAX_NESTING} levels")]
    TooDeep,
    #[error("unexpected character {found:?} at position {position}")]
    UnexpectedChar { found: char, position: usize },
    #[error("unknown name {name:?} at position {position}; only min, max and round are allowed")]
    UnknownName { name: String, position: usize },
    #[error("unexpected {found} at position {position}")]
    UnexpectedToken { found: String, position: usize },
    #[error("the expression ends where a value or ')' was expected")]
    UnexpectedEnd,
    #[error("{function} takes {expected} argument(s), got {got}")]
    Arity {
        function: &'static str,
        expected: &'static str,
        got: usize,
    },
    #[error("round's digit count must be a whole number from -15 to 15, got {0}")]
    RoundDigits(f64),
    #[error("division by zero")]
    DivisionByZero,
    #[error("the result is not a finite number")]
    NonFinite,
}

/// Evaluates `expr` (see the module documentation for the grammar) to a finite number.
pub fn eval(expr: &str) -> Result<f64, ExprError> {
    let len = expr.chars().count();
    if len > MAX_INPUT_CHARS {
        return Err(ExprError::TooLong { len });
    }
    let tokens = lex(expr)?;
    if tokens.is_empty() {
        return Err(ExprError::Empty);
    }
    let mut parser = Parser {
        tokens,
        next: 0,
        depth: 0,
    };
    let value = parser.expression()?;
    if let Some(extra) = parser.peek() {
        return Err(extra.unexpected());
    }
    finite(value)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Function {
    Min,
    Max,
    Round,
}

impl Function {
    fn from_name(name: &str) -> Option<Function> {
        [Function::Min, Function::Max, Function::Round]
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
    }

    fn name(self) -> &'static str {
        match self {
            Function::Min => "min",
            Function::Max => "max",
            Function::Round => "round",
        }
    }

    fn apply(self, args: Vec<f64>) -> Result<f64, ExprError> {
        let got = args.len();
        match (self, args.as_slice()) {
            (Function::Round, [x]) => round_to(*x, 0.0),
            (Function::Round, [x, digits]) => round_to(*x, *digits),
            (Function::Round, _) => Err(ExprError::Arity {
                function: self.name(),
                expected: "1 or 2",
                got,
            }),
            (Function::Min | Function::Max, _) => {
                let pick = if self == Function::Min {
                    f64::min
                } else {
                    f64::max
                };
                args.into_iter().reduce(pick).ok_or(ExprError::Arity {
                    function: self.name(),
                    expected: "1 or more",
                    got,
                })
            }
        }
    }
}

/// Rounds half away from zero at `digits` decimals (negative digits round to tens, hundreds…).
/// A scaled value within a few ulps of a half counts as a half, so `round(2.675, 2)` is 2.68 as
/// written, although the binary value of 2.675 lies just below it.
fn round_to(x: f64, digits: f64) -> Result<f64, ExprError> {
    if digits.fract() != 0.0 || digits.abs() > MAX_ROUND_DIGITS {
        return Err(ExprError::RoundDigits(digits));
    }
    let scale = 10f64.powi(digits.abs() as i32);
    let scaled = if digits >= 0.0 { x * scale } else { x / scale };
    if !scaled.is_finite() || scaled.abs() >= WHOLE_NUMBERS_FROM {
        return Ok(x);
    }
    let rounded = (scaled + scaled * 8.0 * f64::EPSILON).round();
    finite(if digits >= 0.0 {
        rounded / scale
    } else {
        rounded * scale
    })
}

fn finite(value: f64) -> Result<f64, ExprError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(ExprError::NonFinite)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Token {
    Number(f64),
    Plus,
    Minus,
    Times,
    Divide,
    Caret,
    Open,
    Close,
    Comma,
    Call(Function),
}

#[derive(Debug, Clone, Copy)]
struct Lexed {
    token: Token,
    position: usize,
}

impl Lexed {
    fn unexpected(&self) -> ExprError {
        let found = match self.token {
            Token::Number(value) => format!("number {value}"),
            Token::Plus => "'+'".to_string(),
            Token::Minus => "'-'".to_string(),
            Token::Times => "'*'".to_string(),
            Token::Divide => "'/'".to_string(),
            Token::Caret => "'^'".to_string(),
            Token::Open => "'('".to_string(),
            Token::Close => "')'".to_string(),
            Token::Comma => "','".to_string(),
            Token::Call(function) => format!("function {}", function.name()),
        };
        ExprError::UnexpectedToken {
            found,
            position: self.position,
        }
    }
}

fn lex(expr: &str) -> Result<Vec<Lexed>, ExprError> {
    let mut chars = expr.chars().enumerate().peekable();
    let mut tokens = Vec::new();
    while let Some((position, c)) = chars.next() {
        let token = match c {
            c if c.is_whitespace() => continue,
            '+' => Token::Plus,
            '-' | '−' => Token::Minus,
            '*' | '×' | '·' => Token::Times,
            '/' | '÷' => Token::Divide,
            '^' => Token::Caret,
            '(' => Token::Open,
            ')' => Token::Close,
            ',' => Token::Comma,
            '0'..='9' | '.' => {
                let mut literal = String::from(c);
                let mut seen_point = c == '.';
                let mut digit_after_point = false;
                while let Some(&(at, next)) = chars.peek() {
                    match next {
                        '0'..='9' => digit_after_point = seen_point,
                        '.' if !seen_point => seen_point = true,
                        '.' => {
                            return Err(ExprError::UnexpectedChar {
                                found: '.',
                                position: at,
                            })
                        }
                        _ => break,
                    }
                    literal.push(next);
                    chars.next();
                }
                if seen_point && !digit_after_point {
                    return Err(ExprError::UnexpectedChar {
                        found: '.',
                        position,
                    });
                }
                let value: f64 = literal
                    .parse()
                    .map_err(|_| ExprError::UnexpectedChar { found: c, position })?;
                let value = if chars.next_if(|&(_, next)| next == '%').is_some() {
                    value / 100.0
                } else {
                    value
                };
                Token::Number(finite(value)?)
            }
            c if c.is_alphabetic() || c == '_' => {
                let mut name = String::from(c);
                while let Some((_, next)) = chars.next_if(|&(_, n)| n.is_alphanumeric() || n == '_')
                {
                    name.push(next);
                }
                match Function::from_name(&name) {
                    Some(function) => Token::Call(function),
                    None => return Err(ExprError::UnknownName { name, position }),
                }
            }
            found => return Err(ExprError::UnexpectedChar { found, position }),
        };
        tokens.push(Lexed { token, position });
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Lexed>,
    next: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<Lexed> {
        self.tokens.get(self.next).copied()
    }

    fn advance_if(&mut self, wanted: impl Fn(Token) -> bool) -> Option<Token> {
        let token = self
            .peek()
            .map(|lexed| lexed.token)
            .filter(|&t| wanted(t))?;
        self.next += 1;
        Some(token)
    }

    fn expect(&mut self, wanted: Token) -> Result<(), ExprError> {
        match self.peek() {
            Some(lexed) if lexed.token == wanted => {
                self.next += 1;
                Ok(())
            }
            Some(lexed) => Err(lexed.unexpected()),
            None => Err(ExprError::UnexpectedEnd),
        }
    }

    fn expression(&mut self) -> Result<f64, ExprError> {
        let mut value = self.term()?;
        while let Some(op) = self.advance_if(|t| matches!(t, Token::Plus | Token::Minus)) {
            let rhs = self.term()?;
            value = finite(if op == Token::Plus {
                value + rhs
            } else {
                value - rhs
            })?;
        }
        Ok(value)
    }

    fn term(&mut self) -> Result<f64, ExprError> {
        let mut value = self.signed()?;
        while let Some(op) = self.advance_if(|t| matches!(t, Token::Times | Token::Divide)) {
            let rhs = self.signed()?;
            value = if op == Token::Times {
                finite(value * rhs)?
            } else if rhs == 0.0 {
                return Err(ExprError::DivisionByZero);
            } else {
                finite(value / rhs)?
            };
        }
        Ok(value)
    }

    /// Leading signs, then a power chain: the sign applies to the whole chain (`-2^2 = -4`).
    fn signed(&mut self) -> Result<f64, ExprError> {
        let negative = self.signs();
        let value = self.power()?;
        Ok(if negative { -value } else { value })
    }

    /// Consumes a run of unary signs; true when their product is negative.
    fn signs(&mut self) -> bool {
        let mut negative = false;
        while let Some(sign) = self.advance_if(|t| matches!(t, Token::Plus | Token::Minus)) {
            negative ^= sign == Token::Minus;
        }
        negative
    }

    /// `base ^ e1 ^ e2 …`, right-associative; each exponent may carry its own signs, which bind
    /// looser than the `^` to its right (`2^-3^2 = 2^-(3^2)`).
    fn power(&mut self) -> Result<f64, ExprError> {
        let base = self.primary()?;
        let mut exponents = Vec::new();
        while self.advance_if(|t| t == Token::Caret).is_some() {
            let negative = self.signs();
            exponents.push((negative, self.primary()?));
        }
        let mut exponent: Option<f64> = None;
        for (negative, operand) in exponents.into_iter().rev() {
            let raised = match exponent {
                Some(e) => finite(operand.powf(e))?,
                None => operand,
            };
            exponent = Some(if negative { -raised } else { raised });
        }
        match exponent {
            Some(e) => finite(base.powf(e)),
            None => Ok(base),
        }
    }

    fn primary(&mut self) -> Result<f64, ExprError> {
        let lexed = self.peek().ok_or(ExprError::UnexpectedEnd)?;
        self.next += 1;
        match lexed.token {
            Token::Number(value) => Ok(value),
            Token::Open => {
                let value = self.nested(Parser::expression)?;
                self.expect(Token::Close)?;
                Ok(value)
            }
            Token::Call(function) => {
                self.expect(Token::Open)?;
                let args = self.nested(Parser::arguments)?;
                self.expect(Token::Close)?;
                function.apply(args)
            }
            _ => Err(lexed.unexpected()),
        }
    }

    /// Comma-separated arguments up to (not including) the closing parenthesis; none for `f()`.
    fn arguments(&mut self) -> Result<Vec<f64>, ExprError> {
        if self.peek().is_some_and(|lexed| lexed.token == Token::Close) {
            return Ok(Vec::new());
        }
        let mut args = vec![self.expression()?];
        while self.advance_if(|t| t == Token::Comma).is_some() {
            args.push(self.expression()?);
        }
        Ok(args)
    }

    fn nested<T>(
        &mut self,
        inside: impl FnOnce(&mut Parser) -> Result<T, ExprError>,
    ) -> Result<T, ExprError> {
        if self.depth >= MAX_NESTING {
            return Err(ExprError::TooDeep);
        }
        self.depth += 1;
        let result = inside(self);
        self.depth -= 1;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_value(expr: &str, expected: f64) {
        match eval(expr) {
            Ok(value) => assert!(
                (value - expected).abs() <= 1e-12 * expected.abs().max(1.0),
                "{expr:?} gave {value}, expected {expected}"
            ),
            Err(e) => panic!("{expr:?} failed: {e}"),
        }
    }

    #[test]
    fn precedence_and_associativity() {
        assert_value("2 + 3 * 4", 14.0);
        assert_value("(2 + 3) * 4", 20.0);
        assert_value("10 - 4 - 3", 3.0);
        assert_value("100 / 10 / 2", 5.0);
        assert_value("2 * 3 ^ 2", 18.0);
        assert_value("1 + 2 * 3 - 4 / 2", 5.0);
    }

    #[test]
    fn caret_is_right_associative() {
        assert_value("2^3^2", 512.0);
        assert_value("(2^3)^2", 64.0);
    }

    #[test]
    fn unary_minus_binds_looser_than_caret() {
        assert_value("-2^2", -4.0);
        assert_value("(-2)^2", 4.0);
        assert_value("2^-1", 0.5);
        assert_value("2^-3^2", 2f64.powi(-9));
        assert_value("--3", 3.0);
        assert_value("+3", 3.0);
        assert_value("4 * -2", -8.0);
        assert_value("−5 + 2", -3.0);
    }

    #[test]
    fn numbers_decimals_and_percent() {
        assert_value("0.5 * 2", 1.0);
        assert_value(".5 * 2", 1.0);
        assert_value("12.5%", 0.125);
        assert_value("50% * 200", 100.0);
        assert_value("1200 * (1 - 15%)", 1020.0);
    }

    #[test]
    fn unicode_operators() {
        assert_value("3 × 4 ÷ 2 − 1", 5.0);
        assert_value("2·3", 6.0);
    }

    #[test]
    fn functions() {
        assert_value("min(3, 1, 2)", 1.0);
        assert_value("max(1, 2.5)", 2.5);
        assert_value("max(7)", 7.0);
        assert_value("MAX(1, 2)", 2.0);
        assert_value("round(2.5)", 3.0);
        assert_value("round(-2.5)", -3.0);
        assert_value("round(2.675, 2)", 2.68);
        assert_value("round(1234.5678, 2)", 1234.57);
        assert_value("round(1250, -2)", 1300.0);
        assert_value("round(10^300, 2)", 1e300);
    }

    #[test]
    fn nested_function_calls() {
        assert_value("round(max(2, 3) * min(1.5, 4) / 7, 3)", 0.643);
        assert_value("max(1, min(5, 3)) ^ 2", 9.0);
    }

    #[test]
    fn division_by_zero_is_an_error() {
        assert_eq!(eval("1/0"), Err(ExprError::DivisionByZero));
        assert_eq!(eval("5 / (2 - 2)"), Err(ExprError::DivisionByZero));
        assert_eq!(eval("5 ÷ 0%"), Err(ExprError::DivisionByZero));
    }

    #[test]
    fn non_finite_results_are_errors() {
        assert_eq!(eval("10^400"), Err(ExprError::NonFinite));
        assert_eq!(eval("(-8)^(1/3)"), Err(ExprError::NonFinite));
        assert_eq!(eval("0^-1"), Err(ExprError::NonFinite));
        assert_eq!(eval(&"9".repeat(400)), Err(ExprError::NonFinite));
    }

    #[test]
    fn rejects_identifiers_and_junk() {
        assert!(matches!(eval("x + 1"), Err(ExprError::UnknownName { .. })));
        assert!(matches!(eval("2e5"), Err(ExprError::UnknownName { .. })));
        assert!(matches!(
            eval("sqrt(4)"),
            Err(ExprError::UnknownName { .. })
        ));
        assert!(matches!(
            eval("1 = 1"),
            Err(ExprError::UnexpectedChar { found: '=', .. })
        ));
        assert!(matches!(
            eval("$5 * 2"),
            Err(ExprError::UnexpectedChar { found: '$', .. })
        ));
        assert!(matches!(
            eval("1,234"),
            Err(ExprError::UnexpectedToken { .. })
        ));
        assert!(matches!(
            eval("2(3)"),
            Err(ExprError::UnexpectedToken { .. })
        ));
        assert!(matches!(
            eval("1 2"),
            Err(ExprError::UnexpectedToken { .. })
        ));
        assert!(matches!(eval("5."), Err(ExprError::UnexpectedChar { .. })));
        assert!(matches!(
            eval("1.2.3"),
            Err(ExprError::UnexpectedChar { .. })
        ));
        assert!(matches!(
            eval("10 % 3"),
            Err(ExprError::UnexpectedChar { found: '%', .. })
        ));
        assert!(matches!(
            eval("10%3"),
            Err(ExprError::UnexpectedToken { .. })
        ));
        assert_eq!(eval("(1 + 2"), Err(ExprError::UnexpectedEnd));
        assert_eq!(eval("1 +"), Err(ExprError::UnexpectedEnd));
        assert_eq!(eval(""), Err(ExprError::Empty));
        assert_eq!(eval(" \t\n"), Err(ExprError::Empty));
    }

    #[test]
    fn commas_only_separate_arguments() {
        assert_value("min(1,234)", 1.0);
        assert!(matches!(
            eval("(1, 2)"),
            Err(ExprError::UnexpectedToken { .. })
        ));
    }

    #[test]
    fn function_arity_and_digits_are_checked() {
        assert!(matches!(
            eval("min()"),
            Err(ExprError::Arity { got: 0, .. })
        ));
        assert!(matches!(
            eval("round(1, 2, 3)"),
            Err(ExprError::Arity { got: 3, .. })
        ));
        assert_eq!(eval("round(1, 0.5)"), Err(ExprError::RoundDigits(0.5)));
        assert_eq!(eval("round(1, 16)"), Err(ExprError::RoundDigits(16.0)));
        assert!(matches!(
            eval("round 2"),
            Err(ExprError::UnexpectedToken { .. })
        ));
    }

    #[test]
    fn nesting_is_bounded() {
        let at_limit = format!("{}1{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
        assert_value(&at_limit, 1.0);
        let too_deep = format!(
            "{}1{}",
            "(".repeat(MAX_NESTING + 1),
            ")".repeat(MAX_NESTING + 1)
        );
        assert_eq!(eval(&too_deep), Err(ExprError::TooDeep));
        let hostile = format!("{}1{}", "(".repeat(2000), ")".repeat(2000));
        assert_eq!(eval(&hostile), Err(ExprError::TooDeep));
        let calls = format!("{}1{}", "max(".repeat(800), ")".repeat(800));
        assert_eq!(eval(&calls), Err(ExprError::TooDeep));
    }

    #[test]
    fn long_sign_and_power_chains_do_not_recurse() {
        assert_value(&format!("{}1", "-".repeat(4000)), 1.0);
        assert_value(&format!("{}1", "1^".repeat(2000)), 1.0);
    }

    #[test]
    fn long_input_is_an_error() {
        let long = "1+".repeat(MAX_INPUT_CHARS / 2) + "1";
        assert_eq!(
            eval(&long),
            Err(ExprError::TooLong {
                len: MAX_INPUT_CHARS + 1
            })
        );
        let at_limit = "1+".repeat(MAX_INPUT_CHARS / 2 - 1) + "11";
        assert_eq!(at_limit.chars().count(), MAX_INPUT_CHARS);
        assert_value(&at_limit, 2058.0);
    }

    use crate::util::soup::Soup;

    #[test]
    fn random_inputs_never_panic_and_results_are_finite() {
        let pieces = [
            "0",
            "1",
            "2",
            "9",
            "12.5",
            ".",
            "%",
            "+",
            "-",
            "−",
            "*",
            "×",
            "·",
            "/",
            "÷",
            "^",
            "(",
            ")",
            ",",
            " ",
            "min(",
            "max(",
            "round(",
            "x",
            "=",
            "e",
            "é",
            "\u{0}",
            "9999999999",
            "0.000001",
            "((",
            "))",
        ];
        let mut soup = Soup(0x9E37_79B9_7F4A_7C15);
        let mut ok = 0;
        for _ in 0..5000 {
            let len = soup.next() % 40;
            let expr: String = (0..len).map(|_| soup.pick(&pieces)).collect();
            if let Ok(value) = eval(&expr) {
                assert!(value.is_finite(), "{expr:?} gave {value}");
                ok += 1;
            }
        }
        for _ in 0..2000 {
            let len = soup.next() % 64;
            let bytes: Vec<u8> = (0..len).map(|_| soup.next() as u8).collect();
            if let Ok(value) = eval(&String::from_utf8_lossy(&bytes)) {
                assert!(value.is_finite());
            }
        }
        assert!(ok > 0, "the soup never produced a valid expression");
    }
}
