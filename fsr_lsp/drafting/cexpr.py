"""C expressions of host code -> spec expressions over size names.

`(N + threads - 1) / threads` with `int N = 1 << 20; int threads = 256;` becomes
`(N + 256 - 1) / 256` and a size name N with bench value 1048576. A name with a literal value
becomes a size name, unless the kernel's own code or the launch's block uses it (then the
kernel was compiled or launched for that value, and it stays a number). Names with no value at
the launch site (a wrapper function's parameters) become size names with a guessed value and
say so. A ternary reads as `min`/`max`, or as the branch a condition of constants picks. Anything
else (a function call, a condition on sizes) is unresolved, with the reason.
"""

from __future__ import annotations

from functools import lru_cache

import re
from dataclasses import dataclass, field

from tree_sitter import Node

from ..kernels.c_types import ITEMSIZE
from ..kernels.c_types import element_type
from ..kernels.treesitter import parse
from ..specs.expr import ExprError, evaluate
from .conditionals import extreme, remainder_flag, remainder_test, truth
from .host import FROM_ARGV, Scope

GUESSED_SIZE = 1 << 20  # bench value of a size the launch site gives no value for
GUESSED_BLOCK = 256  # a block's number the launch site gives no value for (a launcher's `threads`)
_BINARY = {"+", "-", "*", "/", "%", "<<", ">>"}
_MIN_MAX = {"min": "min", "max": "max", "std::min": "min", "std::max": "max", "fminf": "min", "fmaxf": "max",
            "MIN": "min", "MAX": "max"}
_ROUNDING = {"ceil": "ceil", "ceilf": "ceil", "std::ceil": "ceil", "floor": "floor", "floorf": "floor",
             "std::floor": "floor"}
_FLOAT_TYPES = {"float", "double", "long double"}
_FUNCTIONAL_CASTS = _FLOAT_TYPES | {"int", "unsigned", "long", "size_t", "int64_t", "uint64_t", "int32_t", "uint32_t"}
_NUMBER = re.compile(r"^(0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)([uUlLfF]*)$")


class Unresolved(Exception):
    """An expression the launch site does not pin down; the message says what."""


@dataclass
class Translator:
    scope: Scope
    constants: set[str] = field(default_factory=set)  # names that must stay numbers
    sizes: dict[str, int] = field(default_factory=dict)  # size name -> bench value
    guessed: set[str] = field(default_factory=set)  # sizes whose value was guessed
    pinned: dict[str, int] = field(default_factory=dict)  # numbers with no value at the launch site, guessed
    origins: dict[str, str] = field(default_factory=dict)  # size name -> its initialiser as written
    frozen: int = 0  # inside a constant: every name reached stays a number

    def expr(self, text: str) -> str:
        """A spec expression for C text (raises Unresolved)."""
        return self._node(_expression_node(text), text, 0)

    def constant(self, text: str) -> int | float:
        """The value of C text that must not depend on sizes (a block size, a template argument)."""
        self.frozen += 1
        try:
            out = self.expr(text)
        finally:
            self.frozen -= 1
        try:
            return evaluate(out, {})
        except ExprError:
            raise Unresolved(f"`{text}` depends on sizes, but must be a number here") from None

    # ------------------------------------------------------------ nodes

    def _node(self, node: Node, text: str, depth: int) -> str:
        if depth > 40:
            raise Unresolved("definitions nest too deeply (a cycle?)")
        t = node.type
        if t == "number_literal":
            return _number(text_of(node))
        if t == "parenthesized_expression":
            return f"({self._node(node.named_children[0], text, depth + 1)})"
        if t == "binary_expression":
            op = text_of(node.child_by_field_name("operator"))
            remainder = self._remainder_test(node, op, text, depth)
            if remainder is not None:
                return remainder
            if op not in _BINARY:
                raise Unresolved(f"operator {op} in `{text}`")
            left = self._node(node.child_by_field_name("left"), text, depth + 1)
            right = self._node(node.child_by_field_name("right"), text, depth + 1)
            return f"{left} {op} {right}"
        if t == "unary_expression":
            op = text_of(node.child_by_field_name("operator"))
            if op not in ("-", "+"):
                raise Unresolved(f"operator {op} in `{text}`")
            return f"{op}{self._node(node.child_by_field_name('argument'), text, depth + 1)}"
        if t == "cast_expression":
            return self._node(node.child_by_field_name("value"), text, depth + 1)
        if t == "sizeof_expression":
            return str(self._sizeof(node))
        if t == "identifier":
            return self._name(text_of(node), depth)
        if t == "field_expression":
            return self._field(node, depth)
        if t == "call_expression":
            return self._call(node, text, depth)
        if t == "conditional_expression":
            return self._conditional(node, text, depth)
        raise Unresolved(f"`{text_of(node)}` ({t.replace('_', ' ')})")

    def _remainder_test(self, node: Node, op: str, text: str, depth: int) -> str | None:
        """`n % B > 0` or `n % B != 0` (a bool counted as 1: `n / B + (n % B > 0)` rounds up):
        `min(n % B, 1)`, the same 0 or 1 for sizes, which are never negative. None otherwise."""
        test = remainder_test(node) if op in (">", "!=") else None
        if test is None or not test[1]:
            return None
        return f"min({self._node(test[0], text, depth + 1)}, 1)"

    def _conditional(self, node: Node, text: str, depth: int) -> str:
        """`argc > 1 ? atoi(argv[1]) : 4096`: the value the program runs with when not told;
        `n < B ? n : B`: `min(n, B)` (and max, and their mirrors), true at every size; a
        condition of constants alone (`N % 16 ? N + 16 - N % 16 : N`, N a `#define` the kernel
        is compiled for): the branch it picks. A condition on sizes otherwise is unresolved: the
        spec's expressions have no branches."""
        condition = node.child_by_field_name("condition")
        branches = [node.child_by_field_name(k) for k in ("consequence", "alternative")]
        if condition is None or branches[0] is None or branches[1] is None:
            raise Unresolved(f"`{text_of(node)}` (conditional expression)")
        if re.search(r"\bargc\b", text_of(condition)):
            plain = [b for b in branches if not re.search(r"\bargv\b", text_of(b))]
            if len(plain) != 1:
                raise Unresolved(f"`{text_of(node)}` (conditional expression)")
            return self._node(plain[0], text, depth + 1)
        extreme = self._extreme(condition, branches[0], branches[1], text, depth)
        if extreme is not None:
            return extreme
        flag = self._remainder_flag(condition, branches[0], branches[1], text, depth)
        if flag is not None:
            return flag
        picked = self._truth(condition, depth)
        if picked is None:
            raise Unresolved(f"`{text_of(node)}` (conditional expression on sizes)")
        return self._node(branches[0] if picked else branches[1], text, depth + 1)

    def _extreme(self, condition: Node, yes: Node, no: Node, text: str, depth: int) -> str | None:
        found = extreme(condition, yes, no)
        if found is None:
            return None
        fn, left, right = found
        return f"{fn}({self._node(left, text, depth + 1)}, {self._node(right, text, depth + 1)})"

    def _remainder_flag(self, condition: Node, yes: Node, no: Node, text: str, depth: int) -> str | None:
        found = remainder_flag(condition, yes, no)
        if found is None:
            return None
        remainder, one_when_nonzero = found
        flag = f"min({self._node(remainder, text, depth + 1)}, 1)"
        return flag if one_when_nonzero else f"(1 - {flag})"

    def _truth(self, condition: Node, depth: int) -> bool | None:
        """A condition's value where it holds constants alone (inside a constant, every name is
        one); None where it depends on a size. Sizes it reaches are not kept."""
        kept = (dict(self.sizes), set(self.guessed), dict(self.origins), dict(self.pinned))
        try:
            return truth(condition, lambda n: evaluate(self._node(n, text_of(n), depth + 1), {}))
        except (Unresolved, ValueError, ArithmeticError, TypeError):  # ExprError is a ValueError
            return None
        finally:
            self.sizes, self.guessed, self.origins, self.pinned = kept

    def _name(self, name: str, depth: int) -> str:
        s = self.scope
        unknown = name in s.params or name in s.values and bool(FROM_ARGV.match(s.values[name]))
        if unknown and (self.frozen or name in self.constants) and _is_size_name(name):
            # the block's own number, given by the caller or the command line (`dim3 threads(nthreads)`
            # in a launcher): guessed, the same wherever the launch uses it, and said
            self.pinned.setdefault(name, GUESSED_BLOCK)
            self.origins.setdefault(name, "from the command line" if name in s.values
                                    else f"a parameter of {s.function or 'the host function'}")
            return str(self.pinned[name])
        if name in s.values and FROM_ARGV.match(s.values[name]) and _is_size_name(name) and not self.frozen:
            self.sizes.setdefault(name, GUESSED_SIZE)  # `int n = atoi(argv[1]);`: known only when it runs
            self.guessed.add(name)
            self.origins.setdefault(name, f"{name} = {s.values[name]}: from the command line, value guessed "
                                          "(fsr capture takes the real one from a run)")
            return name
        if name in s.values:
            definition = s.values[name]
            constant = name in self.constants or self.frozen > 0
            self.frozen += constant
            try:
                inner = self._node(_expression_node(definition), definition, depth + 1)
            finally:
                self.frozen -= constant
            try:
                value = evaluate(inner, {})
            except ExprError:
                return f"({inner})"  # defined from other names: inline it
            derived = bool(set(re.findall(r"[A-Za-z_]\w*", definition)) & self.constants)
            if constant or derived or isinstance(value, float) or not _is_size_name(name):
                return _number(str(value))  # derived: `smem = BLOCK * sizeof(float)` follows the compiled-in block
            self.sizes[name] = int(value)
            self.origins[name] = f"{name} = {definition}"
            return name
        if name in s.params and _is_size_name(name):
            self.sizes.setdefault(name, GUESSED_SIZE)
            self.guessed.add(name)
            self.origins.setdefault(name, f"{name}: a parameter of {s.function or 'the host function'}, value guessed")
            return name
        raise Unresolved(f"`{name}` has no value at the launch site")

    def _field(self, node: Node, depth: int) -> str:
        arg, field_ = node.child_by_field_name("argument"), node.child_by_field_name("field")
        name, member = text_of(arg), text_of(field_)
        if name in self.scope.dims and member in ("x", "y", "z"):
            parts = self.scope.dims[name]
            index = "xyz".index(member)
            if index >= len(parts):
                return "1"
            return f"({self._node(_expression_node(parts[index]), parts[index], depth + 1)})"
        raise Unresolved(f"`{name}.{member}`")

    def _call(self, node: Node, text: str, depth: int) -> str:
        fn = text_of(node.child_by_field_name("function"))
        args = node.child_by_field_name("arguments")
        arg_texts = [text_of(a) for a in args.named_children] if args is not None else []
        if fn in _MIN_MAX and len(arg_texts) == 2:
            return f"{_MIN_MAX[fn]}({', '.join(self.expr(a) for a in arg_texts)})"
        if (fn in _FUNCTIONAL_CASTS or re.fullmatch(r"static_cast<[\w :]+>", fn)) and len(arg_texts) == 1:
            return self._node(args.named_children[0], text, depth + 1)  # `double(n)`: a cast, dropped as casts are
        if fn in _ROUNDING and len(args.named_children) == 1:
            return self._rounded(fn, args.named_children[0], text, depth)
        if fn in self.scope.macros:
            params, body = self.scope.macros[fn]
            if len(params) != len(arg_texts):
                raise Unresolved(f"macro {fn} takes {len(params)} arguments")
            values = {p: a.strip() if re.fullmatch(r"[\w.]+", a.strip()) else f"({a})" for p, a in zip(params, arg_texts)}
            # all at once: `CEIL_DIV(M, N)` called as CEIL_DIV(N, bs) must not turn M's N into bs
            expanded = re.sub(r"\b(" + "|".join(map(re.escape, values)) + r")\b", lambda m: values[m.group(1)], body) \
                if values else body
            inner = self._node(_expression_node(expanded), expanded, depth + 1)
            return inner if _enclosed(inner) else f"({inner})"
        container = re.fullmatch(r"(\w+)\s*(?:\.|->)\s*(size|numel)", fn)
        if container and not arg_texts and self.scope.allocations.get(container.group(1)) \
                and self.scope.allocations[container.group(1)].count:
            count = self.scope.allocations[container.group(1)].count  # `h.size()` of `std::vector<float> h(n)`
            return f"({self._node(_expression_node(count), count, depth + 1)})"
        raise Unresolved(f"a call to {fn}()")

    def _rounded(self, fn: str, arg: Node, text: str, depth: int) -> str:
        """`ceil(n / 256.0)` is `cdiv(n, 256)`; `ceil(n / 256)` over integers is C's truncating
        division, rounded up after the fact (the grid a program with n=1 launches has 0 blocks);
        `floor()` of an integer is that integer.
        Casts are dropped in translation, so whether the division is a float's is read here."""
        while arg.type == "parenthesized_expression" and arg.named_children:
            arg = arg.named_children[0]
        floating = _floating(arg, self.scope.floating)
        if arg.type == "binary_expression" and text_of(arg.child_by_field_name("operator")) == "/" and floating \
                and _ROUNDING[fn] == "ceil":
            a = self._node(arg.child_by_field_name("left"), text, depth + 1)
            b = self._node(arg.child_by_field_name("right"), text, depth + 1)
            return f"cdiv({a}, {b})"
        if floating:
            raise Unresolved(f"`{text_of(arg)}` rounded by {fn}(): only a quotient rounded up reads as a size")
        inner = self._node(arg, text, depth + 1)  # an integer already: rounding keeps it
        return inner if _enclosed(inner) else f"({inner})"

    def _sizeof(self, node: Node) -> int:
        inner = node.child_by_field_name("type")
        if inner is None:  # `sizeof(real)` with a typedef the parser cannot know is a type
            value = node.child_by_field_name("value")
            name = text_of(value).strip("() \t") if value is not None else ""
            if re.fullmatch(r"[A-Za-z_][\w:]*", name):
                return itemsize_of(name, self.scope)
            raise Unresolved(f"`{text_of(node)}`: the size of an expression")
        return itemsize_of(" ".join(text_of(inner).split()), self.scope)


def itemsize_of(type_text: str, scope: Scope) -> int:
    """Bytes of a C type (through the file's typedefs, `using`s and `#define`s)."""
    type_text = resolve_type(type_text, scope)
    dtype, lanes = element_type(type_text.replace("const ", "").strip())
    if dtype is None:
        raise Unresolved(f"sizeof({type_text})")
    return ITEMSIZE[dtype] * lanes


def resolve_type(type_text: str, scope: Scope) -> str:
    """A typedef'd name to what it stands for; `ops::real` is looked up as `real` when the file
    declares no qualified name (aliases are collected without their namespace)."""
    seen = 0
    while seen < 10:
        key = type_text if type_text in scope.types else type_text.split("::")[-1].strip()
        if key not in scope.types or "::" in type_text and key in ("", type_text):
            break
        type_text, seen = scope.types[key], seen + 1
    return type_text


def text_of(node: Node | None) -> str:
    return node.text.decode() if node is not None and node.text is not None else ""


@lru_cache(maxsize=4096)
def _expression_node(text: str) -> Node:
    """C text parsed as one expression (a node keeps its tree alive; nodes are read, never changed)."""
    tree = parse(f"int __fsr_e = ({text});".encode())
    decl = tree.root_node.named_children[0] if tree.root_node.named_children else None
    init = decl.child_by_field_name("declarator") if decl is not None else None
    value = init.child_by_field_name("value") if init is not None else None
    if value is None or tree.root_node.has_error:
        raise Unresolved(f"`{text}` is not an expression fsr can read")
    return value.named_children[0] if value.type == "parenthesized_expression" else value


def _floating(node: Node, names: set[str] = frozenset()) -> bool:  # type: ignore[assignment]
    """Whether C evaluates the expression in floating point: a float literal, a name declared
    float or double (`names`), or a cast to a floating type anywhere in its arithmetic."""
    t = node.type
    if t == "identifier":
        return text_of(node) in names
    if t == "number_literal":
        body = text_of(node).lower()
        return not body.startswith("0x") and any(c in body for c in ".ef")
    if t == "cast_expression":
        kind = " ".join(text_of(node.child_by_field_name("type")).split())
        return kind in _FLOAT_TYPES or (kind not in _FUNCTIONAL_CASTS and _floating(node.child_by_field_name("value"), names))
    if t in ("binary_expression", "parenthesized_expression", "unary_expression"):
        return any(_floating(c, names) for c in node.named_children)
    if t == "call_expression":
        fn = " ".join(text_of(node.child_by_field_name("function")).split())
        return fn in _FLOAT_TYPES or fn in ("static_cast<float>", "static_cast<double>")
    return False


def _number(text: str) -> str:
    text = text.strip()
    if text[:1] in "-+":  # tree-sitter reads `-1.0f` as one literal
        return ("-" if text[0] == "-" else "") + _number(text[1:])
    m = _NUMBER.match(text)
    if not m:
        raise Unresolved(f"number `{text}`")
    body = m.group(1)
    if body.lower().startswith("0x"):
        return str(int(body, 16))
    if any(c in body for c in ".eE") or "f" in m.group(2).lower():
        value = float(body)
        return repr(value)
    return str(int(body))


def _enclosed(text: str) -> bool:
    """Whether one pair of parentheses encloses the whole text."""
    if not (text.startswith("(") and text.endswith(")")):
        return False
    depth = 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and i < len(text) - 1:
            return False
    return True


def _is_size_name(name: str) -> bool:
    """A name the spec can use: a Python identifier that is not one of its functions."""
    return name.isidentifier() and name not in ("min", "max", "cdiv") and not name.startswith("__")
