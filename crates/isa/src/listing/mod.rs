//! Listings: the human table ([`table`]), JSON lines ([`json`]), and the text form
//! (`.s`, [`disassemble`]) with its assembler ([`assemble`]).

mod asm;
pub mod json;
mod lexer;
pub mod table;
mod text;
pub mod value;

pub use asm::{assemble, AsmError, Loader};
pub use text::{disassemble, io_line, Disassembly, INLINE_LIMIT};
