//! The C type map (filled by the parser work).
