"""HCL files as plain data: parse with tree-sitter, keep positions, cache by blob SHA.

A file is turned into a small, JSON-able tree (:data:`Body`) that the
Terragrunt evaluator in :mod:`tooling.model.repo` walks. Expressions become tuples:

======================  =========================================
``("lit", value)``      a literal (string, number, bool, null)
``("tmpl", [expr...])`` a string template; parts are concatenated
``("var", root, [k])``  a traversal: ``local.a.b[0]`` -> ("var", "local", ["a", "b", 0])
``("call", f, [arg])``  a function call
``("obj", [[k, v]])``   an object constructor (keys are expressions)
``("tup", [expr...])``  a tuple constructor
``("cond", c, a, b)``   ``c ? a : b``
``("for", [names], coll, key, value, cond)``  a ``for`` expression (``key`` is None
                        for a tuple, ``cond`` None without ``if``)
``("bin", op, l, r)``   a binary operation (``!x``: ``("bin", "!", None, x)``,
                        ``-x``: ``0 - x``)
``("post", e, [k])``    a traversal applied to any expression
``("unknown", line)``   anything the evaluator does not model (for expressions ...)
``("opaque", line, c)`` a large value the model never needs (``inputs``,
                        ``mock_outputs``): only its function calls ``c`` are kept
======================  =========================================

Parsing is the expensive step (tree-sitter plus this conversion), so results are
cached by the git blob SHA of the file's bytes (:mod:`tooling.model.parsecache`); a
warm run reads the cache with ``marshal`` and never builds a syntax tree.
"""

from __future__ import annotations

import hashlib
from typing import Any

from tooling.errors import ToolingError
from tooling.model.hclstrict import CODE_SUFFIXES, Refused, once_only, refused_bytes

# A body: {"a": {name: [expr, line]}, "b": [[type, [labels], body, line]]}
Body = dict[str, Any]
Expr = tuple[Any, ...]

_PARSER: Any = None
_CALLS: Any = None

#: the operator tokens of binary and unary operations
_OPERATORS = frozenset({"==", "!=", "<", ">", "<=", ">=", "&&", "||", "+", "-", "*", "/", "%", "!"})
#: attributes whose values the model never evaluates; only the calls in them
#: (file(), read_tfvars_file()...) matter, so converting them whole is waste
OPAQUE_ATTRIBUTES = frozenset({"inputs", "mock_outputs"})


class HclSyntaxError(ToolingError):
    """An HCL file that does not parse; the message names file:line."""


class HclTooDeepError(HclSyntaxError):
    """HCL nested deeper than :data:`MAX_DEPTH` syntax-tree levels: it parses, but the model
    does not follow it (a unit holding it is one the model cannot evaluate: it fails closed)."""


#: how deep a file's syntax tree may go (about 50 levels of nested lists or objects; real
#: configuration stays far below): the reader and the evaluator recurse on it
MAX_DEPTH = 200


def _too_deep(root: Any) -> Any | None:
    """The first node of the tree below :data:`MAX_DEPTH` levels, or None (iterative)."""
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return node
        stack.extend((child, depth + 1) for child in node.children)
    return None


def blob_sha(data: bytes) -> str:
    """The git blob SHA-1 of ``data`` (what ``git ls-tree`` prints for the same bytes)."""
    digest = hashlib.sha1(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def _parser() -> Any:
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_hcl

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_hcl.language()))
    return _PARSER


def _calls_query() -> Any:
    global _CALLS
    if _CALLS is None:
        import tree_sitter
        import tree_sitter_hcl

        _CALLS = tree_sitter.QueryCursor(
            tree_sitter.Query(
                tree_sitter.Language(tree_sitter_hcl.language()), "(function_call) @call"
            )
        )
    return _CALLS


def parse(data: bytes, filename: str) -> Body:
    """Parse HCL bytes into a :data:`Body`; raise :class:`HclSyntaxError` with file:line
    (what HCL or Terragrunt refuse is refused too: :mod:`tooling.model.hclstrict`)."""
    bad = refused_bytes(data)
    if bad is not None:
        line, col, why = bad
        raise HclSyntaxError(
            f"{filename}:{line}:{col}: HCL syntax error ({why}): Terragrunt and the tooling's "
            "rules would not read the same text. Save the file as UTF-8 text (without NUL "
            "bytes) and run again."
        )
    tree = _parser().parse(data)
    root = tree.root_node
    if root.has_error:
        line, col, what = _first_error(root)
        lines = data.splitlines()
        snippet = lines[line - 1].decode(errors="replace").strip() if 0 < line <= len(lines) else ""
        raise HclSyntaxError(
            f"{filename}:{line}:{col}: HCL syntax error ({what}): {snippet!r}. "
            "Fix the file (`terragrunt hcl fmt` shows the same error) and run again."
        )
    deep = _too_deep(root)
    if deep is not None:
        line, col = deep.start_point[0] + 1, deep.start_point[1] + 1
        raise HclTooDeepError(
            f"{filename}:{line}:{col}: nested more than {MAX_DEPTH} syntax levels deep: the "
            "model cannot evaluate it, so the unit gets no gate or executor and is never "
            "applied. Flatten the expression (fewer nested lists/objects/calls)."
        )
    body = next((c for c in root.children if c.type == "body"), None)
    if body is None:
        return {"a": {}, "b": []}
    try:
        return _Converter(data, not filename.endswith(CODE_SUFFIXES)).body(body)
    except Refused as exc:
        raise HclSyntaxError(
            f"{filename}:{exc.line}:{exc.col}: HCL syntax error ({exc.why}): Terragrunt "
            "would refuse the file or read only one of them. Keep one and run again."
        ) from None


def syntax_tree(data: bytes) -> Any:
    """The tree-sitter root node of HCL bytes, for readers that need positions.

    Offsets on the nodes are byte offsets into ``data``. The caller checks
    ``has_error`` (and :func:`error_at` says where) before trusting the tree. A NUL
    byte is read as a blank (same offsets): the syntax tree would end there, while
    Terragrunt reads on in a comment, so a call after it must not go unseen.
    """
    return _parser().parse(data.replace(b"\0", b" ") if b"\0" in data else data).root_node


def error_at(root: Any) -> tuple[int, int, str]:
    """1-based line and column of the first syntax error under ``root``, and what it is."""
    return _first_error(root)


def _first_error(node: Any) -> tuple[int, int, str]:
    stack = [node]
    while stack:
        current = stack.pop(0)
        if current.type == "ERROR" or current.is_missing:
            what = f"missing {current.type}" if current.is_missing else "unexpected input"
            return current.start_point[0] + 1, current.start_point[1] + 1, what
        stack[0:0] = [
            c for c in current.children if c.has_error or c.is_missing or c.type == "ERROR"
        ]
    return node.start_point[0] + 1, node.start_point[1] + 1, "unexpected input"


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def _unescape(text: str) -> str:
    if "$${" in text or "%%{" in text:  # HCL's template escapes
        text = text.replace("$${", "${").replace("%%{", "%{")
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] in _ESCAPES:
            out.append(_ESCAPES[text[i + 1]])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


class _Converter:
    def __init__(self, data: bytes, config: bool = True) -> None:
        self.data = data
        self.config = config  # Terragrunt configuration, not OpenTofu code

    def text(self, node: Any) -> str:
        return self.data[node.start_byte : node.end_byte].decode(errors="replace")

    def body(self, node: Any) -> Body:
        attrs: dict[str, list[Any]] = {}
        blocks: list[list[Any]] = []
        seen: dict[tuple[str, ...], int] = {}
        for child in node.named_children:
            if child.type == "attribute":
                name = self.text(child.named_children[0])
                expr = next(c for c in child.named_children[1:] if c.type == "expression")
                line = child.start_point[0] + 1
                if name in attrs:
                    raise Refused(
                        line,
                        child.start_point[1] + 1,
                        f"the attribute {name!r} is set twice, first at line {attrs[name][1]}",
                    )
                if name in OPAQUE_ATTRIBUTES:
                    attrs[name] = [("opaque", line, self.outer_calls(expr)), line]
                else:
                    attrs[name] = [self.expr(expr), line]
            elif child.type in ("block", "one_line_block"):
                kids = child.named_children
                btype = self.text(kids[0])
                labels: list[str] = []
                inner: Body = {"a": {}, "b": []}
                for kid in kids[1:]:
                    if kid.type == "string_lit":
                        labels.append(
                            "".join(
                                self.text(t)
                                for t in kid.named_children
                                if t.type == "template_literal"
                            )
                        )
                    elif kid.type == "identifier":
                        labels.append(self.text(kid))
                    elif kid.type == "body":
                        inner = self.body(kid)
                    elif kid.type == "attribute":  # one-line block without a body node
                        inner["a"][self.text(kid.named_children[0])] = [
                            self.expr(kid.named_children[1]),
                            kid.start_point[0] + 1,
                        ]
                line = child.start_point[0] + 1
                if self.config:
                    once_only(seen, btype, labels, line, child.start_point[1] + 1)
                blocks.append([btype, labels, inner, line])
        return {"a": attrs, "b": blocks}

    def outer_calls(self, node: Any) -> list[Expr]:
        """The function calls in ``node`` that are not inside another call."""
        found = _calls_query().captures(node).get("call", [])
        out: list[Expr] = []
        end = -1
        for call in sorted(found, key=lambda n: (n.start_byte, -n.end_byte)):
            if call.start_byte >= end:
                out.append(self.term(call))
                end = call.end_byte
        return out

    def expr(self, node: Any) -> Expr:
        kids = node.named_children
        if node.type != "expression":
            return self.term(node)
        if not kids:
            return ("unknown", node.start_point[0] + 1)
        return self.chain(kids, node.start_point[0] + 1)

    def chain(self, kids: list[Any], line: int) -> Expr:
        """A term followed by its ``.attr`` and ``[index]`` traversals (sibling nodes)."""
        base = self.term(kids[0])
        keys: list[Any] = []
        for post in kids[1:]:
            if post.type == "get_attr":
                keys.append(self.text(post.named_children[0]))
            elif post.type == "index":
                idx = post.named_children[0]
                inner = idx.named_children[0] if idx.named_children else idx
                if idx.type == "legacy_index":
                    keys.append(int(self.text(idx).lstrip(".")))
                else:
                    keys.append(self.expr(inner))
            else:  # splats and anything else: not modelled
                return ("unknown", line)
        if not keys:
            return base
        if base[0] == "var" and all(isinstance(k, str) for k in keys):
            return ("var", base[1], [*base[2], *keys])
        return ("post", base, keys)

    def term(self, node: Any) -> Expr:
        t = node.type
        kids = node.named_children
        if t == "expression":
            return self.expr(node)
        if t == "literal_value":
            lit = kids[0]
            if lit.type == "string_lit":
                return ("lit", _unescape(self.quoted_text(lit)))
            if lit.type == "numeric_lit":
                raw = self.text(lit)
                return ("lit", float(raw) if any(c in raw for c in ".eE") else int(raw))
            if lit.type == "bool_lit":
                return ("lit", self.text(lit) == "true")
            return ("lit", None)
        if t == "template_expr":
            return self.template(kids[0])
        if t == "variable_expr":
            return ("var", self.text(kids[0]), [])
        if t == "function_call":
            name = self.text(kids[0])
            args: list[Expr] = []
            for kid in kids[1:]:
                if kid.type == "function_arguments":
                    args = [self.expr(a) for a in kid.named_children if a.type == "expression"]
            return ("call", name, args)
        if t == "collection_value":
            coll = kids[0]
            if coll.type == "tuple":
                return (
                    "tup",
                    [self.expr(e) for e in coll.named_children if e.type == "expression"],
                )
            elems = []
            for elem in coll.named_children:
                if elem.type == "object_elem":
                    k, v = (e for e in elem.named_children if e.type == "expression")
                    key = self.expr(k)
                    if key[0] == "var" and not key[2]:  # bare identifier key
                        key = ("lit", key[1])
                    elems.append([key, self.expr(v)])
            return ("obj", elems)
        if t == "for_expr":
            return self.for_expr(kids[0])
        if t == "conditional":
            c, a, b = (e for e in kids if e.type == "expression")
            return ("cond", self.expr(c), self.expr(a), self.expr(b))
        if t == "operation" and kids and kids[0].type in ("binary_operation", "unary_operation"):
            op_node = kids[0]
            line = node.start_point[0] + 1
            op_tok = next((c for c in op_node.children if c.type in _OPERATORS), None)
            if op_tok is None:
                return ("unknown", line)
            # each side is a term with its traversals (``local.a.b``: three sibling nodes)
            left = [c for c in op_node.named_children if c.end_byte <= op_tok.start_byte]
            right = [c for c in op_node.named_children if c.start_byte >= op_tok.end_byte]
            if not right:
                return ("unknown", line)
            operand = self.chain(right, line)
            if op_node.type == "unary_operation":
                # ``!x`` and ``-x`` as binary operations with a neutral left operand
                return (
                    ("bin", "!", ("lit", None), operand)
                    if op_tok.type == "!"
                    else ("bin", "-", ("lit", 0), operand)
                )
            if not left:
                return ("unknown", line)
            return ("bin", op_tok.type, self.chain(left, line), operand)
        return ("unknown", node.start_point[0] + 1)

    def for_expr(self, node: Any) -> Expr:
        """``[for k, v in coll : value if cond]`` / ``{for ... : key => value}``."""
        names: list[str] = []
        coll: Expr = ("unknown", node.start_point[0] + 1)
        exprs: list[Expr] = []
        cond: Expr | None = None
        for kid in node.named_children:
            if kid.type == "for_intro":
                names = [self.text(c) for c in kid.named_children if c.type == "identifier"]
                coll = next(
                    (self.expr(c) for c in kid.named_children if c.type == "expression"), coll
                )
            elif kid.type == "expression":
                exprs.append(self.expr(kid))
            elif kid.type == "for_cond":
                cond = next(
                    (self.expr(c) for c in kid.named_children if c.type == "expression"), None
                )
        key = exprs[0] if node.type == "for_object_expr" and len(exprs) > 1 else None
        value = exprs[-1] if exprs else ("unknown", node.start_point[0] + 1)
        return ("for", names, coll, key, value, cond)

    def quoted_text(self, node: Any) -> str:
        """The text between a quoted string's quotes (blanks kept: the syntax tree's
        literals leave out those beside an interpolation)."""
        kids = node.children
        if len(kids) >= 2 and kids[0].type == "quoted_template_start":
            end = kids[-1].start_byte if kids[-1].type == "quoted_template_end" else node.end_byte
            return self.data[kids[0].end_byte : end].decode(errors="replace")
        return "".join(self.text(c) for c in node.named_children if c.type == "template_literal")

    def template(self, node: Any) -> Expr:
        if node.type == "heredoc_template":
            return self.heredoc(node)
        kids = node.children
        start = kids[0].end_byte if kids and kids[0].type == "quoted_template_start" else None
        end = kids[-1].start_byte if kids and kids[-1].type == "quoted_template_end" else None
        parts: list[Expr] = []
        at = start
        for kid in node.named_children:
            if kid.type == "template_literal":
                if at is None:  # not a quoted template: its literals as the tree has them
                    parts.append(("lit", _unescape(self.text(kid))))
                continue
            if kid.type not in ("template_interpolation", "template_directive"):
                continue
            if at is not None and kid.start_byte > at:
                parts.append(
                    ("lit", _unescape(self.data[at : kid.start_byte].decode(errors="replace")))
                )
            if kid.type == "template_interpolation":
                inner = [e for e in kid.named_children if e.type == "expression"]
                if inner:
                    parts.append(self.expr(inner[0]))
            else:
                parts.append(("unknown", kid.start_point[0] + 1))
            if at is not None:
                at = kid.end_byte
        if at is not None and end is not None and end > at:
            parts.append(("lit", _unescape(self.data[at:end].decode(errors="replace"))))
        if len(parts) == 1 and parts[0][0] == "lit":
            return parts[0]
        return ("tmpl", parts)

    def heredoc(self, node: Any) -> Expr:
        """A heredoc exactly as HCL reads it: its text between the marker lines (the
        syntax tree leaves out the blanks between literals), ``<<-`` indentation removed."""
        kids = node.children
        markers = [k for k in kids if k.type == "heredoc_identifier"]
        flush = any(k.type == "heredoc_start" and self.text(k) == "<<-" for k in kids)
        if len(markers) < 2:
            return ("unknown", node.start_point[0] + 1)
        start = markers[0].end_byte + 1  # after the newline that ends the opening line
        end = self.data.rfind(b"\n", start - 1, markers[-1].start_byte) + 1
        tokens: list[Any] = []  # str: a line of literal text (ending in a newline or not); Expr
        at = start
        for kid in node.named_children:
            if kid.type not in ("template_interpolation", "template_directive"):
                continue
            tokens += _lines(self.data[at : kid.start_byte].decode(errors="replace"))
            if kid.type == "template_directive":
                return ("unknown", kid.start_point[0] + 1)
            inner = [e for e in kid.named_children if e.type == "expression"]
            tokens.append(self.expr(inner[0]) if inner else ("lit", ""))
            at = kid.end_byte
        tokens += _lines(self.data[at:end].decode(errors="replace"))
        if flush:
            tokens = _flush(tokens)
        parts: list[Expr] = []
        for tok in tokens:
            if isinstance(tok, str):
                text = tok.replace("$${", "${").replace("%%{", "%{")
                if parts and parts[-1][0] == "lit":
                    parts[-1] = ("lit", parts[-1][1] + text)
                elif text:
                    parts.append(("lit", text))
            else:
                parts.append(tok)
        return ("tmpl", parts)


def _lines(text: str) -> list[str]:
    """``text`` cut after each newline, as HCL's scanner cuts a heredoc's literal text."""
    return [line for line in text.splitlines(keepends=True) if line]


def _flush(tokens: list[Any]) -> list[Any]:
    """HCL's ``<<-`` rule: the fewest leading blanks of any line (a line of blanks only
    does not count; a line starting with an interpolation counts as none) are removed
    from every line."""
    least: int | None = None
    newline = True
    for tok in tokens:
        if newline:
            newline = False
            if isinstance(tok, str):
                stripped = tok.lstrip()
                if not (stripped == "" and tok.endswith("\n")):
                    blanks = len(tok) - len(stripped)
                    least = blanks if least is None else min(least, blanks)
            else:
                least = 0
        if isinstance(tok, str) and tok.endswith("\n"):
            newline = True
    cut = least or 0
    out: list[Any] = []
    newline = True
    for tok in tokens:
        if newline and isinstance(tok, str) and not (tok.strip() == "" and tok.endswith("\n")):
            tok = tok[cut:]
        newline = isinstance(tok, str) and tok.endswith("\n")
        out.append(tok)
    return out
