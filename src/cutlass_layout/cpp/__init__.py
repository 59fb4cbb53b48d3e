"""The one reader of C++: libclang (:mod:`.clang`: flags, precompiled headers, a parsed probe
unit; :mod:`.cursors`: walks over its cursors; :mod:`.interpret`: a small interpreter running
a parsed function), tree-sitter (:mod:`.treesitter`: the scan's extractor;
:mod:`.treesitter_parse`: macros blanked, the parse, brace balance; :mod:`.int_constants`: the
constant evaluator) and every text-level reading of C++ (:mod:`.brackets`: comments, brackets,
statements; :mod:`.arguments`: template and call arguments, template parameters;
:mod:`.macros`: macro definitions, calls and expansions; :mod:`.declarations`: what a source
declares and instantiates; :mod:`.text`: launchers cut down after their kernel alias;
:mod:`.rehost`: function templates re-hosted as class templates; :mod:`.preprocessor`: ``#if`` /
``#elif`` groups and their conditions, as the C preprocessor evaluates them). Nothing above
this folder imports ``clang.cindex``."""
