"""Kernels declared in function templates, re-hosted as class templates (text transforms).

A kernel declared in a function *template* that a source instantiates explicitly (flashinfer's
``CutlassGroupwiseScaledGEMMSM120<...>``) lies in a body libclang does not show instantiated;
:func:`rehost_template` copies the template's declarations up to the kernel alias into a
class template of the same parameters (local ``constexpr`` values become static members,
``using namespace`` goes to the enclosing scope), so the kernel of each instantiation is a
named type. TensorRT-LLM's SM90 mixed-input launchers need more of it: their kernel alias is
``GemmKernel`` naming a selector's ``::Type`` (no ``GemmUniversal<`` spelled), fpA_intB's
sits under ``if constexpr`` (:func:`declarations_only`), the MoE ones forward to an ``_impl``
template (:func:`forwarded_call`) and take a default argument only their header declares
(:func:`~cutlass_layout.cpp.arguments.with_defaults`). Kernels under branches (flashinfer's
``group_gemm_sm90.cuh``) get one re-hosted class per path to a kernel alias
(:func:`kernel_paths`, :func:`rehost_paths`).

Like :mod:`.text`'s cut-down launchers, these are text transforms of the install's own code;
whatever they produce is compiled, and a transform that does not compile is not used.
"""

from __future__ import annotations

import re

from .arguments import defaults_dropped, parameter_names, template_parameters, with_defaults
from .brackets import NOT_NEWLINE, blank_comments, closers, matching, statement_end
from .macros import expand_macro_calls
from .text import ADAPTER_KERNEL, GEMM_KERNEL_ALIAS_RE, KERNEL_ALIAS_RE, adapter_alias, cut_after_last_kernel_alias


def _body(definition: str) -> tuple[str, str] | None:
    """``(template parameters, body after its ``{``)`` of a function template's definition."""
    found = template_parameters(definition)
    if found is None:
        return None
    params, after = found
    clean = blank_comments(definition)
    paren = clean.find("(", after)
    close = matching(clean, paren, "(", ")") if paren >= 0 else None
    if close is None:
        return None
    brace = clean.find("{", close)
    if brace < 0:
        return None
    return params, definition[brace + 1 :]


#: the message of the ``static_assert`` an ``if constexpr`` around the kernel becomes
HOISTED_IF = (
    "cutlass-layout: the launcher declares no kernel with these template arguments "
    "(the if constexpr around its kernel alias is false)"
)


#: a statement that starts with a (qualified) name and a ``(``: a call, where ``);`` ends it
_CALL_STATEMENT = re.compile(r"(?:^|(?<=[;{}]))(\s*)((?:::)?[A-Za-z_]\w*(?:\s*(?:::|\.|->)\s*[A-Za-z_]\w*)*)\s*\(")
#: what starts such a statement without being a call (kept), or is a statement
#: :func:`rehost_template` refuses (``return(x);``)
_NOT_CALLS = {
    "static_assert",
    "decltype",
    "sizeof",
    "alignof",
    "alignas",
    "noexcept",
    "typeid",
    "return",
    "if",
    "for",
    "while",
    "switch",
    "throw",
    "co_return",
    "co_yield",
    "co_await",
}


#: a run-time ``if (`` (not ``if constexpr``): a guard where a ``throw`` is all it does
_GUARD = re.compile(r"\bif\s*\(")


def declarations_only(kept: str) -> str:
    """The part of a function body before its kernel alias (``kept``, comments blanked) as
    class members: statements that are calls blanked (upper-case macro calls,
    ``TLLM_LOG_DEBUG(...);``: logging, no declaration; function calls, flashinfer's
    ``CutlassGroupwiseScaledGEMMSM100LowLatency`` starts with ``std::swap(m, n);``: run-time
    values, no type), run-time guards that only throw (``if (C) throw E(...);``, flashinfer
    0.7.4's SM120 SVDQuant ``run_tactic_impl`` starts with one: no declaration either), and an
    ``if constexpr (C) {`` still open at the end
    (the kernel declared inside it, as fpA_intB's ``fpA_intB_launcher_sm90.inl`` does under
    ``!should_filter_tma_warp_specialized_gemm_problem_shape_v<...>``) replaced by
    ``static_assert((C), "...")``: the declarations inside it are the class's, and an
    instantiation where ``C`` is false, for which the launcher declares no kernel, fails with
    that message instead of being laid out. Anything else is kept as written."""
    out = kept
    for m in reversed(list(_CALL_STATEMENT.finditer(kept))):
        if m.group(2) in _NOT_CALLS:
            continue
        close = matching(kept, m.end() - 1, "(", ")")
        semi = re.match(r"\s*;", kept[close + 1 :]) if close is not None else None
        if close is None or semi is None:
            continue
        stop = close + 1 + semi.end()
        out = out[: m.end(1)] + NOT_NEWLINE.sub(" ", out[m.end(1) : stop]) + out[stop:]
    for m in reversed(list(_GUARD.finditer(out))):
        close = matching(out, m.end() - 1, "(", ")")
        if close is None:
            continue
        throw = re.match(r"\s*throw\b", out[close + 1 :])
        end = statement_end(out, close + 1 + throw.end()) if throw is not None else None
        if end is not None:
            out = out[: m.start()] + NOT_NEWLINE.sub(" ", out[m.start() : end]) + out[end:]
    for m in reversed(list(re.finditer(r"\bif\s+constexpr\s*\(", out))):
        close = matching(out, m.end() - 1, "(", ")")
        if close is None:
            continue
        brace = re.match(r"\s*\{", out[close + 1 :])
        if brace is None or matching(out, close + brace.end(), "{", "}") is not None:
            continue  # a statement, or a block closed before the alias
        cond = out[m.end() : close]
        out = out[: m.start()] + f'static_assert(({cond}), "{HOISTED_IF}");' + out[close + 1 + brace.end() :]
    return out


def _no_statements(kept: str) -> bool:
    code = blank_comments("\n".join(ln for ln in kept.split("\n") if not ln.lstrip().startswith("#")))
    return re.search(r"\b(if|for|while|return|switch)\b\s*[(\w]", code) is None


def rehost_template(
    definition: str, index: int, *, name: str | None = None, declared: str | None = None
) -> tuple[str, str, str] | None:
    """A class template holding a function template's declarations up to its last kernel
    alias: returns ``(using-directives, class template text, kernel alias name)``; the class is
    named ``name`` (``cl_rehost_<index>`` by default). The kernel alias is the last
    :data:`KERNEL_ALIAS_RE` of the body, else its last ``using GemmKernel = ...``
    (:data:`GEMM_KERNEL_ALIAS_RE`), else the ``GemmKernel`` of the last alias whose
    ``GemmKernel`` the body reads (:func:`adapter_alias`: a device adapter), declared after it
    as :data:`ADAPTER_KERNEL`. The body before it becomes members
    (:func:`declarations_only`; local ``constexpr`` values static members, ``using namespace``
    moved out); ``declared``, another declaration's parameter list, gives the parameters'
    default arguments (:func:`with_defaults`). None when the body has no kernel alias or
    statements other than declarations come before it."""
    found = _body(definition)
    if found is None:
        return None
    params, body = found
    if declared is not None:
        params = with_defaults(params, declared)
    pattern = KERNEL_ALIAS_RE
    cut = cut_after_last_kernel_alias(body)
    if cut is None:
        pattern = GEMM_KERNEL_ALIAS_RE
        cut = cut_after_last_kernel_alias(body, pattern)
    adapter = adapter_alias(body) if cut is None else None
    if adapter is not None:
        cut = adapter[1]
    if cut is None:
        return None
    kept = declarations_only(blank_comments(body[:cut]))
    if adapter is not None:  # the kernel the body reads through the adapter, named
        kept += f"\nusing {ADAPTER_KERNEL} = typename {adapter[0]}::GemmKernel;"
        alias = ADAPTER_KERNEL
    else:
        alias = pattern.findall(kept)[-1]
    usings = re.findall(r"\busing\s+namespace\s+[\w:]+\s*;", kept)
    kept = re.sub(r"\busing\s+namespace\s+[\w:]+\s*;", " ", kept)
    # a local constant becomes a static data member
    kept = re.sub(r"(^\s*|[;{}]\s*)(?:static\s+)?constexpr(\s+static)?\b", r"\1static constexpr", kept)
    if not _no_statements(kept):
        return None  # statements: not a list of declarations
    struct = f"template <{params}>\nstruct {name or f'cl_rehost_{index}'} {{\n{kept}\n{closers(kept)}\n}};\n"
    return "\n".join(usings), struct, alias


def forwarded_call(definition: str) -> tuple[str, str, str] | None:
    """What a function template that only forwards to another does: ``(callee as written,
    its template arguments as written, the declarations before the call)`` where the body is,
    apart from ``static_assert``\\ s and upper-case macro statements, one call
    ``callee<args>(...);`` (or ``return callee<args>(...);``). TensorRT-LLM's
    ``sm90_generic_mixed_moe_gemm_kernelLauncher`` and ``..._small_k_kernelLauncher`` call
    ``sm90_generic_mixed_moe_gemm_kernelLauncher_impl<..., KernelType>``, which declares the
    kernel. None for any other body."""
    found = _body(definition)
    if found is None:
        return None
    _, body = found
    clean = blank_comments(body)
    end = matching("{" + clean, 0, "{", "}")
    if end is None:
        return None
    inner = declarations_only(clean[: end - 1])
    asserts: list[str] = []
    for m in reversed(list(re.finditer(r"\bstatic_assert\s*\(", inner))):
        close = matching(inner, m.end() - 1, "(", ")")
        semi = re.match(r"\s*;", inner[close + 1 :]) if close is not None else None
        if close is None or semi is None:
            return None
        stop = close + 1 + semi.end()
        asserts.insert(0, inner[m.start() : stop])
        inner = inner[: m.start()] + " " * (stop - m.start()) + inner[stop:]
    head = re.fullmatch(r"\s*(?:return\s+)?((?:::)?[A-Za-z_][\w:]*)\s*(<.*)", inner, re.S)
    if head is None:
        return None
    rest = head.group(2)
    gt = matching(rest, 0, "<", ">")
    if gt is None:
        return None
    call = re.match(r"\s*\(", rest[gt + 1 :])
    if call is None:
        return None
    close = matching(rest, gt + 1 + call.end() - 1, "(", ")")
    if close is None or not re.fullmatch(r"\s*;\s*", rest[close + 1 :]):
        return None
    return head.group(1), " ".join(rest[1:gt].split()), "\n".join(asserts)


#: a statement kept as a class member on a path (:func:`kernel_paths`): declarations only
_MEMBER_STMT = re.compile(
    r"\s*(?:using\b|typedef\b|static_assert\b|(?:static\s+)?constexpr\b|enum\b|"
    r"struct\b|class\b|union\b)"
)
#: a block header whose block is a local type (kept whole where it is not on the path)
_TYPE_HEAD = re.compile(r"\s*(?:template\s*<.*>\s*)?(?:struct|class|union|enum)\b", re.S)
_IF_HEAD = re.compile(r"\s*(else\s+)?if\s*(constexpr\s*)?\((.*)\)\s*$", re.S)
_ELSE_HEAD = re.compile(r"\s*else\s*$")


def _next_stop(clean: str, i: int) -> tuple[int, str] | None:
    """The next ``;``, ``{`` or ``}`` of ``clean`` from ``i`` outside parentheses and brackets."""
    depth = 0
    for j in range(i, len(clean)):
        ch = clean[j]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and ch in ";{}":
            return j, ch
    return None


def _negated(cond: str) -> str:
    cond = " ".join(cond.split())
    return f"!{cond}" if re.fullmatch(r"[\w:.]+", cond) else f"!({cond})"


def _path_to(clean: str, start: int, target: int, pieces: list, labels: list) -> bool:
    """Fill ``pieces`` (``("decl", text)`` and ``("cond", C)``, in order) and ``labels`` (the
    runtime conditions) along the path from ``start`` to the statement at ``target``; False
    where a block on the path is one this reader does not follow (a loop, ``switch``, lambda)."""
    i = start
    chain: tuple[str, list[str]] | None = None  # ("constexpr" | "runtime", conditions so far)
    while True:
        stop = _next_stop(clean, i)
        if stop is None:
            return False
        j, ch = stop
        if ch == "}":
            return False
        if ch == ";":
            stmt = clean[i : j + 1]
            if i <= target < j:
                pieces.append(("decl", stmt))
                return True
            if _MEMBER_STMT.match(stmt):
                pieces.append(("decl", stmt))
            chain = None
            i = j + 1
            continue
        close = matching(clean, j, "{", "}")
        if close is None:
            return False
        head = clean[i:j]
        m_if, m_else = _IF_HEAD.match(head), _ELSE_HEAD.match(head)
        conds: list[tuple[str, str]] = []
        if m_if:
            kind = "constexpr" if m_if.group(2) else "runtime"
            cond = " ".join(m_if.group(3).split())
            before = chain[1] if (m_if.group(1) and chain and chain[0] == kind) else []
            if m_if.group(1) and not (chain and chain[0] == kind) and j < target < close:
                return False  # an else-if whose if this reader did not see
            conds = [(kind, _negated(c)) for c in before] + [(kind, cond)]
            chain = (kind, before + [cond])
        elif m_else:
            if chain is None and j < target < close:
                return False
            conds = [(chain[0], _negated(c)) for c in chain[1]] if chain else []
            chain = None
        elif head.strip():
            if not (j < target < close) and _TYPE_HEAD.match(head):
                end = _next_stop(clean, close + 1)
                stop_at = end[0] + 1 if end and end[1] == ";" else close + 1
                pieces.append(("decl", clean[i:stop_at]))
                i = stop_at
                chain = None
                continue
            if j < target < close:
                return False  # a loop, switch, lambda or initializer around the kernel
            chain = None
        if j < target < close:
            for kind, c in conds:
                (pieces.append(("cond", c)) if kind == "constexpr" else labels.append(c))
            return _path_to(clean, j + 1, target, pieces, labels)
        i = close + 1


def kernel_paths(body: str) -> list[tuple[list[tuple[str, str]], list[str], str]] | None:
    """Each path through a function body (comments blanked, after its ``{``) to a kernel alias
    (:data:`KERNEL_ALIAS_RE`, else :data:`GEMM_KERNEL_ALIAS_RE`), as ``(pieces, labels,
    alias)``: ``pieces`` the declarations on the way (those of enclosing blocks before the
    block the path enters; statements, blocks off the path and the kernel's siblings after it
    left out) and the ``if constexpr`` conditions the path needs (``("cond", C)``, ``!(C)`` for
    an ``else``), in order; ``labels`` the runtime ``if`` conditions it takes (what tells two
    kernels of one function apart). None where a kernel alias lies in a block this reader
    does not follow; ``[]`` where the body has no kernel alias."""
    pattern = KERNEL_ALIAS_RE if KERNEL_ALIAS_RE.search(body) else GEMM_KERNEL_ALIAS_RE
    out = []
    for m in pattern.finditer(body):
        pieces: list = []
        labels: list = []
        if not _path_to(body, 0, m.start(), pieces, labels):
            return None
        out.append((pieces, labels, m.group(1)))
    return out


def _members(decls: list[str]) -> tuple[list[str], str]:
    """(``using namespace`` directives, the declarations as class members: local constants
    static)."""
    kept = " ".join(decls)
    usings = re.findall(r"\busing\s+namespace\s+[\w:]+\s*;", kept)
    kept = re.sub(r"\busing\s+namespace\s+[\w:]+\s*;", " ", kept)
    kept = re.sub(r"(^|[;{}]\s*)(?:static\s+)?constexpr(\s+static)?\b", r"\1static constexpr", kept)
    return usings, kept


def rehost_paths(
    definition: str,
    index: int,
    defining: str,
    *,
    name: str | None = None,
    declared: str | None = None,
    none_type: str = "void",
) -> list[tuple[str, str, str, str]] | None:
    """The kernels of a function template whose body :func:`rehost_template` cannot re-host
    (statements before the kernel alias, or several kernel aliases under branches):
    ``[(using-directives, class templates text, kernel alias name, runtime label), ...]``, one
    per :func:`kernel_paths` path, after :func:`expand_macro_calls` (``defining``: the text of
    the template's file). Path ``j`` is class template ``{name}_p{j}`` (``name``:
    ``cl_rehost_<index>``) of the template's parameters, whose member ``alias`` is the path's
    kernel. A path under ``if constexpr`` conditions checks each with the declarations before
    it (class ``..._w<i>``, member ``cl_when``) and declares the kernel's chain only where all
    hold; elsewhere ``alias`` is ``none_type`` (the function builds no kernel there, and so none
    is laid out). The label joins the path's runtime ``if`` conditions (``weight_column_major``,
    ``!weight_column_major``). None where the body cannot be followed this way."""
    found = _body(definition)
    if found is None:
        return None
    params, written = found
    if declared is not None:
        params = with_defaults(params, declared)
    body = expand_macro_calls(blank_comments(written), defining)
    if body is None:
        return None
    paths = kernel_paths(body)
    names = parameter_names(params)
    if not paths or names is None:
        return None
    plain = defaults_dropped(params)
    args = ", ".join(names)
    base = name or f"cl_rehost_{index}"
    out = []
    for j, (pieces, labels, alias) in enumerate(paths):
        me = f"{base}_p{j}"
        decls: list[str] = []
        conds: list[str] = []
        text = ""
        usings: list[str] = []
        for kind, piece in pieces:
            if kind == "decl":
                decls.append(piece)
            else:
                u, kept = _members(decls)
                usings += u
                text += (
                    f"template <{plain}>\nstruct {me}_w{len(conds)} {{\n{kept}\n"
                    f"static constexpr bool cl_when = ({piece});\n}};\n"
                )
                conds.append(piece)
        u, kept = _members(decls)
        usings += u
        if not conds:
            text += f"template <{params}>\nstruct {me} {{\n{kept}\n}};\n"
        else:
            for i in range(len(conds)):
                stage = f"{me}_s{i}"
                text += f"template <bool, {plain}>\nstruct {stage} {{ using {alias} = {none_type}; }};\n"
            for i in reversed(range(len(conds))):
                stage = f"{me}_s{i}"
                inner = (
                    f"\n{kept}\n"
                    if i == len(conds) - 1
                    else f" using {alias} = typename {me}_s{i + 1}<{me}_w{i + 1}<{args}>::cl_when, {args}>::{alias}; "
                )
                text += f"template <{plain}>\nstruct {stage}<true, {args}> {{{inner}}};\n"
            text += (
                f"template <{params}>\nstruct {me} {{ using {alias} = typename "
                f"{me}_s0<{me}_w0<{args}>::cl_when, {args}>::{alias}; }};\n"
            )
        label = " && ".join(" ".join(c.split()) for c in labels)
        out.append(("\n".join(dict.fromkeys(usings)), text, alias, label))
    return out
