"""The one reader of C++: libclang (:mod:`.clang`: flags, precompiled headers, a parsed probe
unit; :mod:`.cursors`: walks over its cursors; :mod:`.interpret`: a small interpreter running
a parsed function), tree-sitter (:mod:`.treesitter`: the scan's extractor and constant
evaluator) and every text-level reading of C++ (:mod:`.text`: comments, brackets, statements,
template and call arguments, macros, launcher rewriting; :mod:`.preprocessor`: ``#if`` /
``#elif`` groups and their conditions, as the C preprocessor evaluates them). Nothing above
this folder imports ``clang.cindex``."""
