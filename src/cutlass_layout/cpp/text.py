"""Launchers cut down to the declarations their kernel type needs (a text transform of C++).

A launcher declares its kernel's type chain (collective builders, then ``using GemmKernel =
GemmUniversal<...>``) and then builds and runs it: arguments, ``GemmUniversalAdapter``,
``initialize``, ``run``. Parsing that second part costs most of a parse (measured on
TensorRT-LLM MoE launchers: docs/performance.md) and cannot change the kernel's type: a declaration
after the alias can neither change what the alias names nor the layout of the class it
names. So a launcher macro is redefined with its body cut right after its last kernel alias
(:func:`trimmed_macro`), with the braces it leaves open closed again; its selections among
builders are made after the selection (:func:`deferred_selections`). The same launcher with
another stage count (:func:`with_stage_count`, :func:`stage_count_macro`) is read here too:
its mainloop ``CollectiveBuilder``'s ``StageCountType`` argument (CUTLASS's
``collective_builder_decl.hpp``).

What a kernel alias is (:data:`KERNEL_ALIAS_RE`, :data:`GEMM_KERNEL_ALIAS_RE`) is defined here
for the other readers: kernels declared in function templates are re-hosted as class
templates by :mod:`.rehost`. The text beneath: comments and brackets (:mod:`.brackets`),
argument lists (:mod:`.arguments`), macros (:mod:`.macros`), what a source declares
(:mod:`.declarations`).

These are text transforms of the install's own code; whatever they produce is compiled, and a
transform that does not compile is not used (:mod:`cutlass_layout.installs.source_layout` falls back to the
source as written, or reports the error).
"""

from __future__ import annotations

import re

from .arguments import arg_spans
from .brackets import blank_comments, closers, matching, open_scopes, statement_end

#: A type alias naming a GemmUniversal, possibly wrapped (``Sm12xOnly<GemmUniversal<...>>``).
KERNEL_ALIAS_RE = re.compile(
    r"\busing\s+(\w+)\s*=\s*(?:typename\s+)?(?:[\w:]+\s*<\s*)*?"
    r"(?:(?:::)?cutlass::)?(?:gemm::)?(?:kernel::)?(?<!device::)GemmUniversal\s*<"
)
#: An alias named ``GemmKernel``, whatever it names: what a function template re-hosted
#: (:func:`~cutlass_layout.cpp.rehost.rehost_template`) declares its kernel as where no ``GemmUniversal<`` is spelled
#: (TensorRT-LLM's mixed-input MoE launcher: ``using GemmKernel = typename
#: GemmKernelSelector<...>::Type;``, a ``GemmUniversalPrecomputedScheduler`` or a
#: ``SingleWarpgroupPersistentGemm``). Whether it is a kernel, the parse says.
GEMM_KERNEL_ALIAS_RE = re.compile(r"\busing\s+(GemmKernel)\s*=")
#: Any alias declaration (:func:`adapter_alias` looks for the one whose ``GemmKernel`` a body reads).
ANY_ALIAS_RE = re.compile(r"\busing\s+(\w+)\s*=")


def cut_after_last_kernel_alias(body: str, pattern: re.Pattern = KERNEL_ALIAS_RE) -> int | None:
    """The index just after the ``;`` ending the last kernel alias of ``body`` (a function or
    macro body), or None when it has none; ``pattern`` says what a kernel alias is
    (:data:`KERNEL_ALIAS_RE`, or :data:`GEMM_KERNEL_ALIAS_RE` for a re-hosted template)."""
    clean = blank_comments(body)
    last = None
    for m in pattern.finditer(clean):
        last = statement_end(clean, m.end()) or last
    return last


#: The kernel alias :func:`~cutlass_layout.cpp.rehost.rehost_template` adds after a body's adapter alias (flashinfer's
#: SVDQuant ``run_tactic<Config>`` declares only ``using Gemm = typename Config::Gemm;``, a
#: ``GemmUniversalAdapter``, and then reads ``Gemm::GemmKernel``).
ADAPTER_KERNEL = "GemmKernel"


def adapter_alias(body: str) -> tuple[str, int, int] | None:
    """``(name, end, start)`` of the last alias of ``body`` (a function body) whose
    ``GemmKernel`` the body names after it (``Gemm::GemmKernel``: ``Gemm`` a device adapter such
    as ``GemmUniversalAdapter<...>``): ``end`` just after its ``;``, ``start`` where its
    ``using`` is; None when the body names no alias's ``GemmKernel``."""
    clean = blank_comments(body)
    found = None
    for m in ANY_ALIAS_RE.finditer(clean):
        name = m.group(1)
        end = statement_end(clean, m.end())
        if end is not None and re.search(rf"(?<![\w:]){name}\s*::\s*GemmKernel\b", clean[end:]):
            found = (name, end, m.start())
    return found


def _in_class(clean: str, pos: int) -> bool:
    """Whether position ``pos`` of ``clean`` (comments blanked) lies directly in a class body."""
    stack = open_scopes(clean, pos)
    return bool(stack and re.search(r"\b(struct|class|union)\b[^()=]*$", stack[-1]))


def trimmed_macro(name: str, params: str, body: str, probe=None) -> str | None:
    """``#undef``/``#define`` lines redefining launcher macro ``name`` with its body cut after
    its last kernel alias (see the module docstring), its selections among builders made after
    the selection (:func:`deferred_selections`); None when the body has no kernel alias.

    ``probe(index, alias, in_class)``, if given, returns declarations to put right after the
    ``index``-th kernel alias (``alias`` is its name; ``in_class`` whether it is a class member),
    so that one parse of the expanded source also lays the kernels out."""
    cut = cut_after_last_kernel_alias(body)
    if cut is None:
        return None
    kept = deferred_selections(blank_comments(body[:cut]))
    if probe is not None:
        inserts = []
        for i, m in enumerate(KERNEL_ALIAS_RE.finditer(kept)):
            end = cut_after_last_kernel_alias(kept[: m.end()] + kept[m.end() :].split(";", 1)[0] + ";")
            if end is None:
                continue
            inserts.append((end, " " + probe(i, m.group(1), _in_class(kept, m.start())) + " "))
        for end, text in reversed(inserts):
            kept = kept[:end] + text + kept[end:]
    text = " ".join((kept + " " + closers(kept)).split())
    return f"#undef {name}\n#define {name}({params}) {text}\n"


#: ``using NAME = typename TEMPLATE<...>::MEMBER;`` (the template-id found by bracket matching).
_MEMBER_ALIAS_HEAD = re.compile(r"\busing\s+(\w+)\s*=\s*typename\s+((?:::)?[\w:\s]*?\w)\s*<")
#: ``using NAME = std::conditional_t<`` (or ``cute::conditional_t``, ``conditional_t``).
_SELECTION_HEAD = re.compile(
    r"\busing\s+(\w+)\s*=\s*((?:(?:::)?(?:std|cute|cutlass::platform)\s*::\s*)?"
    r"conditional_t)\s*<"
)
_CONDITION = re.compile(r"\s*!?\s*\w+\s*")


def _selection_leaves(clean: str, lt: int, gt: int, spelled: str) -> list[str] | None:
    """The alternatives of ``spelled<COND, A, B>`` (its ``<`` at ``lt``, ``>`` at ``gt``),
    nested selections of the same spelling followed through: the names at its leaves, or None
    where the selection is anything else (a condition that is not a plain or negated name,
    whose commas and angle brackets could not be told apart; a leaf that is not a name)."""
    spans = arg_spans(clean, lt, gt)
    if len(spans) != 3 or not _CONDITION.fullmatch(clean[spans[0][0] : spans[0][1]]):
        return None
    leaves: list[str] = []
    for a, b in spans[1:]:
        arg = clean[a:b].strip()
        if re.fullmatch(r"\w+", arg):
            leaves.append(arg)
            continue
        m = re.match(re.escape(spelled) + r"\s*<", arg)
        if m is None:
            return None
        inner_lt = a + (len(clean[a:b]) - len(clean[a:b].lstrip())) + m.end() - 1
        inner_gt = matching(clean, inner_lt, "<", ">")
        if inner_gt is None or clean[inner_gt + 1 : b].strip():
            return None
        sub = _selection_leaves(clean, inner_lt, inner_gt, spelled)
        if sub is None:
            return None
        leaves += sub
    return leaves


def deferred_selections(body: str) -> str:
    """``body`` (a launcher's, cut after its kernel alias) with each selection among members
    of class templates made after the selection, not before it: where

        using A = typename Builder<...a...>::CollectiveOp;   // (and B, C alike)
        using E = std::conditional_t<IsFinalize, A, std::conditional_t<IsAct, B, C>>;

    and ``A``, ``B``, ``C`` are named nowhere else, it becomes ``using A = Builder<...a...>;``
    (naming a class template's specialization instantiates nothing) and ``using E = typename
    std::conditional_t<IsFinalize, A, std::conditional_t<IsAct, B, C>>::CollectiveOp;``. ``E``
    is the same type; only the builder chosen is instantiated. TensorRT-LLM's MoE TMA
    warp-specialized launcher (``moe_gemm_tma_ws_launcher.inl``) builds three epilogues per
    kernel this way (default, finalize, activation) and uses one. A selection whose condition
    is not a plain name, or whose alternatives are not all such aliases of one member, is
    left as written, and so is every alias named anywhere else (what is left compiles as the
    launcher does, but for an unused alternative that would not: its error is not seen).
    """
    clean = blank_comments(body)
    members: dict[str, tuple[int, int, int, str]] = {}  # name -> (decl start, '<', '>', member)
    for m in _MEMBER_ALIAS_HEAD.finditer(clean):
        lt = m.end() - 1
        gt = matching(clean, lt, "<", ">")
        if gt is None:
            continue
        tail = re.match(r"\s*::\s*(\w+)\s*;", clean[gt + 1 :])
        if tail is not None:
            members[m.group(1)] = (m.start(), lt, gt, tail.group(1))
    edits: list[tuple[int, int, str]] = []
    for m in _SELECTION_HEAD.finditer(clean):
        lt = m.end() - 1
        gt = matching(clean, lt, "<", ">")
        if gt is None or not re.match(r"\s*;", clean[gt + 1 :]):
            continue
        leaves = _selection_leaves(clean, lt, gt, m.group(2))
        if not leaves or len(set(leaves)) != len(leaves) or any(x not in members for x in leaves):
            continue
        member = {members[x][3] for x in leaves}
        if len(member) != 1 or any(len(re.findall(rf"\b{x}\b", clean)) != 2 for x in leaves):
            continue  # named elsewhere too (or twice here): left as written
        for x in leaves:
            start, x_lt, x_gt, _ = members[x]
            head = clean[start:x_lt]
            edits.append(
                (
                    start,
                    x_gt + 1 + clean[x_gt + 1 :].index(";"),
                    re.sub(r"=\s*typename\b", "=", head, count=1).rstrip() + body[x_lt : x_gt + 1],
                )
            )
        rhs = clean.index("=", m.start()) + 1
        edits.append((rhs, gt + 1, f" typename {body[rhs : gt + 1].strip()}::{member.pop()}"))
    for start, end, text in sorted(edits, reverse=True):
        body = body[:start] + text + body[end:]
    return body


# ---------------------------------------------------------------------------------------
# the same launcher with another stage count

#: What replaces the mainloop builder's stage-count argument (:func:`with_stage_count`).
STAGE_COUNT = "cutlass::gemm::collective::StageCount<{}>"
#: A mainloop (not an epilogue) CollectiveBuilder, as a launcher spells it.
_MAINLOOP_BUILDER_RE = re.compile(r"\bgemm\s*::\s*collective\s*::\s*CollectiveBuilder\s*<")
#: The index of the stage-count argument of a mainloop ``CollectiveBuilder``
#: (``collective_builder_decl.hpp``: ArchTag, OpClass, ElementA, GmemLayoutA, AlignmentA,
#: ElementB, GmemLayoutB, AlignmentB, ElementAccumulator, TileShape, ClusterShape,
#: StageCountType, KernelScheduleType[, Enable]).
STAGE_ARGUMENT = 11


def mainloop_builder(body: str) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """Where the mainloop ``CollectiveBuilder`` of ``body``'s last kernel alias is written:
    ``((start, end) of the builder from ``cutlass::`` (or ``gemm::``) to its closing ``>``,
    (start, end) of its stage-count argument)``, indices into ``body``; None when the alias's
    mainloop (``GemmUniversal``'s second argument) is neither a builder's ``CollectiveOp``
    nor a name declared, before the alias, as one.

    ``body`` is a launcher's text (a macro or function body); comments and literals are
    skipped (:func:`blank_comments`)."""
    clean = blank_comments(body)
    hits = list(KERNEL_ALIAS_RE.finditer(clean))
    if not hits:
        return None
    alias = hits[-1]
    lt = alias.end() - 1
    gt = matching(clean, lt, "<", ">")
    if gt is None:
        return None
    args = arg_spans(clean, lt, gt)
    if len(args) < 2:
        return None
    s, e = args[1]
    where = (s, e)
    name = re.fullmatch(r"(?:typename\s+)?(\w+)", clean[s:e])
    if name is not None:  # a name: the last alias of it before the kernel alias
        decls = list(re.finditer(rf"\busing\s+{name.group(1)}\s*=", clean[: alias.start()]))
        if not decls:
            return None
        start = decls[-1].end()
        end = clean.find(";", start)
        where = (start, end if end >= 0 else alias.start())
    m = _MAINLOOP_BUILDER_RE.search(clean, *where)
    if m is None:
        return None
    blt = m.end() - 1
    bgt = matching(clean, blt, "<", ">")
    if bgt is None or bgt > where[1]:
        return None
    if not re.match(r"\s*::\s*CollectiveOp\b", clean[bgt + 1 :]):
        return None
    bargs = arg_spans(clean, blt, bgt)
    if len(bargs) <= STAGE_ARGUMENT + 1:  # through the kernel schedule
        return None
    first = m.start()
    q = re.search(r"(?:::\s*)?cutlass\s*::\s*$", clean[:first])
    return ((q.start() if q else first, bgt + 1), bargs[STAGE_ARGUMENT])


def with_stage_count(body: str, stages) -> str | None:
    """``body`` with only the stage-count argument of the mainloop builder of its last kernel
    alias (:func:`mainloop_builder`) replaced by ``cutlass::gemm::collective::StageCount<stages>``
    (``stages``: a number or a macro parameter's name); None when there is no such builder."""
    found = mainloop_builder(body)
    if found is None:
        return None
    _, (s, e) = found
    return body[:s] + STAGE_COUNT.format(stages) + body[e:]


def stage_count_macro(name: str, params: str, body: str, new_name: str, stages_param: str = "CL_STAGES") -> str | None:
    """``#define new_name(stages_param, params) body`` with the mainloop builder's stage count
    replaced by ``StageCount<stages_param>`` (:func:`with_stage_count`), guarded by ``#ifndef
    new_name`` (a cut-down definition included before it wins); None when the body has no
    mainloop builder. ``name`` is the original macro (unused but in the comment line)."""
    fixed = with_stage_count(body, stages_param)
    if fixed is None:
        return None
    return (
        f"// {name} with the mainloop builder's stage count a parameter\n"
        f"#ifndef {new_name}\n#define {new_name}({stages_param}, {params}) {fixed}\n#endif\n"
    )
