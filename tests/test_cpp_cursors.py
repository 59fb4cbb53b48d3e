"""The cursor walks of :mod:`cutlass_layout.cpp.cursors` and the interpreter of
:mod:`cutlass_layout.cpp.interpret`, on small C++ snippets parsed by libclang (bodies
parsed); every expected value is read off the snippet by hand."""

from __future__ import annotations

import pytest

from cutlass_layout.cpp import cursors as cc
from cutlass_layout.cpp.clang import ProbeUnit, resource_include
from cutlass_layout.cpp.interpret import EnumValue, Eval, Unreadable

FLAGS = ["-x", "c++", "-std=c++17"]

SCOPES = """\
namespace a {
namespace b {
struct S { using Inner = int; };
using X = S;
template <class T> T twice(T t) { return t; }
}  // namespace b
extern "C++" { using InExtern = char; }
void f() {
  using Local = long;
  int v = 1;
  auto l = [] { using InLambda = short; return 0; };
  { using Nested = double; }
}
}  // namespace a
using Top = a::b::X;
enum cl_flag_one {};
enum cl_flag_two {};
enum other {};
"""


def _unit(tmp_path, text: str, name: str = "t.cpp") -> ProbeUnit:
    unit = ProbeUnit(text, FLAGS, tmp_path, filename=str(tmp_path / name), skip_bodies=False)
    assert not unit.errors(), [e.one_line() for e in unit.errors()]
    return unit


def _named(unit, name: str):
    return next(c for c in unit.tu.cursor.walk_preorder() if c.spelling == name)


def test_namespace_scope_yields_each_declaration_with_its_namespaces(tmp_path):
    unit = _unit(tmp_path, SCOPES)
    got = [(path, c.spelling) for path, c in cc.namespace_scope(unit.tu.cursor, (unit.filename,))]
    # a namespace (and the extern block, spelled "") comes before what it holds; S and f are
    # not walked into; the extern block adds no name
    assert got == [
        ((), "a"),
        (("a",), "b"),
        (("a", "b"), "S"),
        (("a", "b"), "X"),
        (("a", "b"), "twice"),
        (("a",), ""),
        (("a",), "InExtern"),
        (("a",), "f"),
        ((), "Top"),
        ((), "cl_flag_one"),
        ((), "cl_flag_two"),
        ((), "other"),
    ]
    assert [c.spelling for _, c in cc.namespace_scope(unit.tu.cursor, ("elsewhere.cpp",))] == []
    kinds = {
        c.spelling: (
            cc.is_alias(c),
            cc.is_scope_owner(c),
            cc.is_function_template(c),
            cc.is_namespace(c),
            cc.is_namespace_scope(c),
        )
        for _, c in cc.namespace_scope(unit.tu.cursor, (unit.filename,))
    }
    assert kinds["X"] == (True, False, False, False, False)
    assert kinds["S"] == (False, True, False, False, False)
    assert kinds["twice"] == (False, True, True, False, False)
    assert kinds["b"] == (False, False, False, True, True)
    assert kinds[""] == (False, False, False, False, True)  # extern "C++" { }


def test_names_of_a_declaration(tmp_path):
    unit = _unit(tmp_path, SCOPES)
    assert cc.qualified_name(_named(unit, "Inner")) == "::a::b::S::Inner"
    assert cc.qualified_name(_named(unit, "Top")) == "::Top"
    assert cc.qualified_name(_named(unit, "Local")) is None  # in a function's body
    assert cc.enclosing_namespaces(_named(unit, "twice")) == ["a", "b"]
    assert cc.enclosing_namespaces(_named(unit, "Inner")) == []  # its parent is a struct
    assert cc.aliased_type(_named(unit, "Top")) == "a::b::S"
    assert cc.written_type(_named(unit, "Top")) == "a::b::X"
    assert cc.aliased_declaration(_named(unit, "Top")) == ["S", "b", "a"]
    assert cc.aliased_declaration(_named(unit, "Local")) == [""]  # a builtin: no declaration


def test_body_declarations_walk_blocks_and_lambdas_in_order(tmp_path):
    unit = _unit(tmp_path, SCOPES)
    f = next(c for _, c in cc.namespace_scope(unit.tu.cursor, (unit.filename,)) if c.spelling == "f")
    names = [d.spelling for d in cc.body_declarations(f)]
    assert names == ["Local", "v", "l", "InLambda", "Nested"]
    assert [d.spelling for d in cc.statement_declarations(f)] == ["Nested", "l", "v", "Local"]  # not in lambdas
    assert cc.declared_enums(unit.tu.cursor, "cl_flag_") == ["cl_flag_one", "cl_flag_two"]


def test_function_templates_of_the_longest_namespace_path(tmp_path):
    header = tmp_path / "h.h"
    header.write_text(
        "template <class T> void run();\n"
        "namespace a { template <class T> void run(); template <class T> void run() {} }\n"
    )
    unit = _unit(tmp_path, '#include "h.h"\nnamespace a { void g(); }\n')
    hits = cc.function_templates(unit.tu.cursor, "run", {(), ("a",)}, unit.filename)
    assert [(c.location.line, c.is_definition()) for c in hits] == [(2, False), (2, True)]
    assert [c.location.line for c in cc.function_templates(unit.tu.cursor, "run", {()}, unit.filename)] == [1]
    assert cc.function_templates(unit.tu.cursor, "run", {()}, str(header)) == []  # spelled in `outside`
    assert cc.function_templates(unit.tu.cursor, "nope", {(), ("a",)}, unit.filename) == []


DISPATCH = """\
enum class Tile { Undefined, T64, T128, T256 };
enum class Cluster { C1, C2 };
using TileSM103 = Tile;
struct Config { Tile tile; Cluster cluster; int sm_version; };
namespace d {
struct Runner {
  int getConfigs() { return 1; }
  int declared();
};
template <class T> int dispatch(Config c) {
  switch (c.tile) { case Tile::T64: return 1; case Tile::Undefined: return 0; default: return -1; }
  if (c.sm_version == 103) {
    switch (c.tile) { case TileSM103::T256: return 3; }
  } else {
    switch (c.cluster) { case Cluster::C2: return 2; }
  }
  return 0;
}
inline Tile candidates(bool mixed) {
  bool const fp8 = mixed && true;
  auto keep = [fp8](Tile t) {
    switch (t) { case Tile::T64: case Tile::T128: return true; case Tile::T256: return fp8; default: return false; }
  };
  return keep(Tile::T256) ? Tile::T128 : Tile::T64;
}
}  // namespace d
"""


def test_definitions_at_namespace_and_class_scope(tmp_path):
    unit = _unit(tmp_path, DISPATCH, "dispatch.cpp")
    got = [(kind, c.spelling) for kind, c in cc.function_definitions(unit.tu.cursor, (str(tmp_path),))]
    assert got == [("method", "getConfigs"), ("function template", "dispatch"), ("function", "candidates")]
    assert cc.tokens(_named(unit, "getConfigs")) == ["int", "getConfigs", "(", ")", "{", "return", "1", ";", "}"]
    assert list(cc.function_definitions(unit.tu.cursor, ("/nowhere",))) == []


def test_switches_their_guards_and_case_labels(tmp_path):
    unit = _unit(tmp_path, DISPATCH, "dispatch.cpp")
    disp = _named(unit, "dispatch")
    found = list(cc.switches(disp, "sm_version"))
    assert [guard for _, guard in found] == [None, "c . sm_version == 103", None]
    assert [cc.condition_names(sw, "tile") for sw, _ in found] == [True, True, False]
    assert [[n for n, _ in cc.case_constants(sw, "Tile")] for sw, _ in found] == [["T64", "Undefined"], ["T256"], []]
    assert [n for n, _ in cc.case_constants(found[2][0], "Cluster")] == ["C2"]
    ((_, ref),) = cc.case_constants(found[1][0], "Tile")
    assert cc.type_qualifiers(ref) == ["TileSM103"]  # the alias the label is qualified with
    assert cc.enumerators_referenced(disp, "Tile") == {"Undefined": 0, "T64": 1, "T128": 2, "T256": 3}
    assert cc.enumerators_referenced(disp, "Other") == {}
    stmts = cc.body_statements(disp)
    assert [cc.is_if(s) for s in stmts] == [False, True, False]


def test_enum_references_outside_lambdas_and_the_lambda_switch(tmp_path):
    unit = _unit(tmp_path, DISPATCH, "dispatch.cpp")
    fn = _named(unit, "candidates")
    names, lambdas = cc.enum_references(fn, "Tile")
    assert names == ["T256", "T128", "T64"] and len(lambdas) == 1  # the lambda's own cases are not read
    arms = cc.switch_returns(lambdas[0], "Tile")
    assert arms == [(["T64", "T128"], ["return", "true"]), (["T256"], ["return", "fp8"])]
    assert cc.switch_returns(lambdas[0], "Cluster") is None  # a label of another enum
    assert cc.switch_returns(_named(unit, "getConfigs"), "Tile") is None  # no switch
    assert cc.variable_tokens(lambdas[0], "fp8") == ["bool", "const", "fp8", "=", "mixed", "&&", "true"]
    assert cc.variable_tokens(lambdas[0], "nope") is None


def test_functions_of_a_namespace_and_aliases_of_a_file(tmp_path):
    text = (
        "namespace cl_probe_0 { namespace in { void f() { using cl_k0_A = int; { int cl_k0_B = 2; } } } }\n"
        "namespace other { void g() { using cl_k1_C = int; } }\n"
        "namespace n1 { using Alias = int; namespace n2 { typedef char T; } }\n"
    )
    unit = _unit(tmp_path, text)
    fns = list(cc.namespace_functions(unit.tu.cursor, unit.filename, "cl_probe_0"))
    assert [f.spelling for f in fns] == ["f"]
    assert sorted(d.spelling for d in cc.statement_declarations(fns[0])) == ["cl_k0_A", "cl_k0_B"]
    (tmp_path / "link.cpp").symlink_to(tmp_path / "t.cpp")
    got = [(ns, c.spelling) for ns, c in cc.file_aliases(unit.tu.cursor, tmp_path / "link.cpp")]
    assert got == [(("n1",), "Alias"), (("n1", "n2"), "T")]


def test_eval_runs_a_function_and_refuses_what_it_does_not_follow(tmp_path):
    text = (
        "enum class Tile { A = 1, B = 4 };\n"
        "struct Config { Tile tile; int cluster; };\n"
        "int pick(int sm, bool big) {\n"
        "  int n = sm == 90 ? 2 : 1;\n"
        "  if (big) { n = n * 10; }\n"
        "  return n + 3;\n"
        "}\n"
        "Tile choose(bool big) { return big ? Tile::B : Tile::A; }\n"
        "int loop(int x) { while (x) { --x; } return x; }\n"
    )
    unit = _unit(tmp_path, text)
    assert Eval().call(_named(unit, "pick"), [90, True]) == 23  # (2 * 10) + 3
    assert Eval().call(_named(unit, "pick"), [80, False]) == 4
    b = Eval().call(_named(unit, "choose"), [True])
    assert isinstance(b, EnumValue) and b == 4 and (b.name, b.enum) == ("B", "Tile")
    with pytest.raises(Unreadable):
        Eval().call(_named(unit, "loop"), [3])
    with pytest.raises(Unreadable):
        Eval().call(_named(unit, "pick"), [90])  # 1 argument for 2 parameters


def test_resource_include_is_the_wheels_builtin_headers():
    assert (resource_include() / "stddef.h").is_file()
