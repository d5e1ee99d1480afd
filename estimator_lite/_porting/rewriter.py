"""Rewrites one Python module's uses of tf.estimator to estimator_lite.

The rewrite works on libcst's concrete syntax tree, so everything it does not
rewrite (comments, blank lines, quoting, other TensorFlow code) comes back
byte for byte. It runs in two passes over the same tree: `_Analyzer` follows
the names a module binds to TensorFlow modules (imports, `v1 = tf.compat.v1`)
and decides every edit; `_Editor` applies them. Deciding first lets an import
of tensorflow_estimator be dropped only once all its uses are known.

The scheme (also in `python -m estimator_lite.migrate --help`):
- an attribute chain that reaches a tf.estimator namespace is spelled in
  full from `estimator_lite` (`tf.estimator.RunConfig` ->
  `estimator_lite.RunConfig`, `tf.compat.v1.estimator.inputs.numpy_input_fn`
  -> `estimator_lite.inputs.numpy_input_fn`), and `import estimator_lite`
  (or `estimator_lite.compat.v1`, `estimator_lite.keras`...) is added before
  the module's first TensorFlow import. The TensorFlow import stays: `tf` is
  nearly always used for other things, and an unused one does no harm;
- an import of a tf.estimator namespace keeps the name it binds
  (`from tensorflow import estimator as tfe` -> `import estimator_lite as
  tfe`), so the code that uses the name is not touched;
- an import of tensorflow_estimator that no code uses any more is removed
  (the package does not import on TensorFlow 2.16+);
- what cannot be rewritten (tensorflow_estimator's private modules, modules
  named by a string) is reported with a hint and left as it was.
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst
from libcst import metadata

from estimator_lite._porting import names
from estimator_lite._porting.report import Change, Problem

_ROOT = "estimator_lite"
# What an added import names: the estimator_lite namespaces of the table, the
# longest first so that `estimator_lite.keras.v1.x` imports the keras.v1 module.
_TARGET_MODULES = tuple(
    sorted(set(names.MODULES.values()), key=len, reverse=True))
# Top-level packages whose import marks where the added imports go: before the
# first of them, so that estimator_lite picks Keras 2 before tf.keras resolves.
_TF_PACKAGES = ("tensorflow", "tensorflow_estimator", "tf_keras", "keras")
_PACKAGE_OF_PRIVATE = names.PRIVATE_PACKAGES[0]

_DYNAMIC_IMPORTERS = ("__import__", "importlib.import_module", "import_module",
                      "importlib.__import__")
_ATTRIBUTE_LOOKUPS = ("getattr", "hasattr")


class RewriteResult:
  """A rewritten module with its changes and problems.

  Attributes:
    module: the rewritten tree (the input tree itself when nothing changed).
    changes: the rewrites, in source order.
    problems: what could not be rewritten.
  """

  def __init__(self, module: cst.Module, changes: List[Change],
               problems: List[Problem]) -> None:
    self.module = module
    self.changes = changes
    self.problems = problems


def _dotted(node: cst.BaseExpression) -> Optional[str]:
  """`a.b.c` for a chain of attributes on a name, None for anything else."""
  if isinstance(node, cst.Name):
    return node.value
  if isinstance(node, cst.Attribute):
    head = _dotted(node.value)
    return None if head is None else f"{head}.{node.attr.value}"
  return None


def _leads_to_table(path: str) -> bool:
  """Whether a tf.estimator namespace lies under `path` (tensorflow, tf.compat...)."""
  return any(key.startswith(path + ".") for key in names.MODULES)


def _is_tensorflow_estimator(path: str) -> bool:
  return path == _PACKAGE_OF_PRIVATE or path.startswith(_PACKAGE_OF_PRIVATE + ".")


def _tracked(path: str) -> bool:
  """Whether a name bound to module `path` needs following (not yet mapped)."""
  return names.target_of(path) is None and (
      _leads_to_table(path) or _is_tensorflow_estimator(path))


def _unmapped_hint(path: str) -> str:
  """The hint for a tensorflow_estimator path that names.target_of does not map."""
  if names.is_private(path):
    return names.PRIVATE_HINT
  return (f"`{path}` has no counterpart in estimator_lite, and "
          f"tensorflow_estimator does not import on TensorFlow 2.16+: use "
          f"`estimator_lite.compat.v1` for `tensorflow_estimator.estimator`, "
          f"`estimator_lite` for tf.estimator's v2 names")


def _module_of(target: str) -> str:
  """The estimator_lite module to import for the dotted name `target`."""
  for module in _TARGET_MODULES:
    if target == module or target.startswith(module + "."):
      return module
  return _ROOT


def _namespace_of(path: str) -> str:
  """The key of names.MODULES that `path` goes through."""
  parts = path.split(".")
  for cut in range(1, len(parts) + 1):
    head = ".".join(parts[:cut])
    if head in names.MODULES:
      return head
  return path


def _name_node(dotted: str) -> Union[cst.Name, cst.Attribute]:
  parts = dotted.split(".")
  node: Union[cst.Name, cst.Attribute] = cst.Name(parts[0])
  for part in parts[1:]:
    node = cst.Attribute(value=node, attr=cst.Name(part))
  return node


def _import_alias(dotted: str, asname: Optional[str]) -> cst.ImportAlias:
  if asname is None or asname == dotted:
    return cst.ImportAlias(name=_name_node(dotted))
  return cst.ImportAlias(name=_name_node(dotted),
                         asname=cst.AsName(name=cst.Name(asname)))


def _string_value(node: cst.BaseExpression) -> Optional[str]:
  if isinstance(node, cst.SimpleString):
    value = node.evaluated_value
    return value if isinstance(value, str) else None
  return None


def _with_last_comma(aliases: List[cst.ImportAlias],
                     like: Sequence[cst.ImportAlias]) -> List[cst.ImportAlias]:
  # The new last name ends the way the old last name did (a trailing comma
  # in a parenthesised list stays; a bare list gets none).
  if aliases:
    aliases[-1] = aliases[-1].with_changes(comma=like[-1].comma)
  return aliases


_Statement = Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]


@dataclasses.dataclass
class _Plan:
  """The edits `_Analyzer` decided, keyed by id() of nodes of the tree."""
  # Attribute chains -> the dotted estimator_lite name that replaces them.
  chains: Dict[int, str] = dataclasses.field(default_factory=dict)
  # Import / ImportFrom statements -> the small statements replacing them.
  statements: Dict[int, List[cst.BaseSmallStatement]] = dataclasses.field(
      default_factory=dict)
  # estimator_lite modules to import, and the top-level index to put them at.
  imports: List[str] = dataclasses.field(default_factory=list)
  import_at: int = 0
  take_leading_lines: bool = False
  # When the module binds `estimator_lite` to something else: the alias each
  # added import gets.
  aliases: Dict[str, str] = dataclasses.field(default_factory=dict)


class _Analyzer(cst.CSTVisitor):
  """Follows TensorFlow module names through a module and plans the rewrite."""

  METADATA_DEPENDENCIES = (metadata.PositionProvider,)

  def __init__(self, module: cst.Module) -> None:
    super().__init__()
    self._module = module
    # Names bound to a TensorFlow module path that leads to tf.estimator.
    self._bindings: Dict[str, str] = {}
    self._scopes: List[Dict[str, str]] = []  # the bindings outside each def
    self._top_index: Dict[int, int] = {
        id(stmt): i for i, stmt in enumerate(module.body)}
    self._top = 0
    self.plan = _Plan()
    self.changes: List[Change] = []
    self.problems: List[Problem] = []
    # Uses of each name outside imports and outside rewritten chains.
    self._uses: Dict[str, List[int]] = collections.defaultdict(list)
    # Imports whose fate depends on whether their name is still used:
    # (name, statement, alias, replacement alias when still used).
    self._conditional: List[Tuple[str, cst.BaseSmallStatement,
                                  cst.ImportAlias,
                                  Optional[cst.ImportAlias]]] = []
    self._alias_values: Set[int] = set()
    self._planned: Dict[int, cst.BaseSmallStatement] = {}  # id -> statement
    self._needed: Set[str] = set()  # estimator_lite modules the chains use
    self._all_names: Set[str] = set()
    self._root_taken = False
    self._existing_imports: Set[str] = set()
    self._first_tf_import: Optional[int] = None
    self._after_imports = 0

  # Positions and bookkeeping.

  def _line(self, node: cst.CSTNode) -> int:
    return self.get_metadata(metadata.PositionProvider, node).start.line

  def _code(self, node: cst.CSTNode) -> str:
    return self._module.code_for_node(node).strip().rstrip(";").rstrip()

  def on_visit(self, node: cst.CSTNode) -> bool:
    index = self._top_index.get(id(node))
    if index is not None:
      self._top = index
    return super().on_visit(node)

  def visit_Module(self, node: cst.Module) -> None:
    # Where added imports go when no top-level statement imports TensorFlow:
    # after the module's leading docstring and imports.
    for index, stmt in enumerate(node.body):
      if not isinstance(stmt, cst.SimpleStatementLine):
        break
      if all(isinstance(small, (cst.Import, cst.ImportFrom))
             for small in stmt.body) or (
                 index == 0 and isinstance(stmt.body[0], cst.Expr)):
        self._after_imports = index + 1

  def _note_tf_import(self, path: str) -> None:
    # A function's or class's own import does not place the added ones.
    if (path.split(".")[0] in _TF_PACKAGES and self._first_tf_import is None
        and not isinstance(self._module.body[self._top],
                           (cst.FunctionDef, cst.ClassDef))):
      self._first_tf_import = self._top

  def _bind(self, name: str, path: Optional[str]) -> None:
    self._all_names.add(name)
    if path is not None and _tracked(path):
      self._bindings[name] = path
    else:
      self._bindings.pop(name, None)

  def _resolve(self, node: cst.BaseExpression) -> Optional[str]:
    dotted = _dotted(node)
    if dotted is None:
      return None
    root, _, rest = dotted.partition(".")
    path = self._bindings.get(root)
    if path is None:
      return None
    return f"{path}.{rest}" if rest else path

  # Imports.

  def visit_Import(self, node: cst.Import) -> bool:
    new_names: List[cst.ImportAlias] = []
    changed = False
    for alias in node.names:
      path = _dotted(alias.name)
      assert path is not None
      self._note_tf_import(path)
      asname = (alias.asname.name.value
                if alias.asname is not None
                and isinstance(alias.asname.name, cst.Name) else None)
      root = path.split(".")[0]
      if asname is None and path.split(".")[0] == _ROOT:
        self._existing_imports.add(path)
      target = names.target_of(path)
      if asname is not None:
        if asname == _ROOT and path.split(".")[0] != _ROOT:
          self._root_taken = True
        if target is not None:
          new_names.append(alias.with_changes(
              name=_name_node(target),
              asname=None if asname == target else alias.asname))
          changed = True
          self._bind(asname, None)
          continue
        if names.is_private(path):
          # Reported here once; the uses of the name are not reported again.
          self._private(node)
          self._bind(asname, None)
          new_names.append(alias)
          continue
        if _is_tensorflow_estimator(path):
          self._conditional.append((asname, node, alias, alias))
        self._bind(asname, path)
      else:
        if target is not None:
          # `import tensorflow.estimator` binds `tensorflow`: it stays bound
          # only if the module still uses it for something else.
          self._conditional.append(
              (root, node, alias, alias.with_changes(name=cst.Name(root))))
          self._bind(root, root)
          continue
        if names.is_private(path):
          self._private(node)
        elif _is_tensorflow_estimator(path):
          self._conditional.append((root, node, alias, alias))
        self._bind(root, root)
      new_names.append(alias)
    if changed:
      self._plan_statement(node, [node.with_changes(
          names=_with_last_comma(new_names, node.names))])
    return False

  def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
    if node.relative or node.module is None:
      return False
    module = _dotted(node.module)
    assert module is not None
    self._note_tf_import(module)
    aliases = [] if isinstance(node.names, cst.ImportStar) else list(node.names)
    target = names.target_of(module)
    if target is not None:
      for alias in aliases:
        self._bind(self._bound_name(alias), None)
      hints = [hint for hint in (names.unknown_name_hint(f"{module}.{_dotted(alias.name)}")
                                 for alias in aliases) if hint is not None]
      if hints:
        # The statement stays as it was: estimator_lite has no object to import.
        self.problems.append(Problem(self._line(node), self._code(node), "; ".join(hints)))
        return False
      self._plan_statement(node, [node.with_changes(
          module=_name_node(target))])
      return False
    if names.is_private(module):
      self._private(node)
      for alias in aliases:
        self._bind(self._bound_name(alias), None)
      return False
    kept: List[cst.ImportAlias] = []
    split: List[cst.BaseSmallStatement] = []
    reported = False
    for alias in aliases:
      bound = self._bound_name(alias)
      full = f"{module}.{_dotted(alias.name)}"
      full_target = names.target_of(full)
      if bound == _ROOT:
        self._root_taken = True
      if full_target is not None:
        split.append(cst.Import(names=[_import_alias(full_target, bound)]))
        self._bind(bound, None)
        continue
      kept.append(alias)
      if names.is_private(full):
        if not reported:
          self._private(node)
          reported = True
        self._bind(bound, None)
        continue
      self._bind(bound, full)
    if _is_tensorflow_estimator(module) and not reported and (
        kept or not aliases):
      # `from tensorflow_estimator import *` and the like stay as they were.
      self.problems.append(Problem(self._line(node), self._code(node),
                                   _unmapped_hint(module)))
    if split:
      replacement: List[cst.BaseSmallStatement] = []
      if kept:
        replacement.append(node.with_changes(
            names=_with_last_comma(kept, aliases)))
      self._plan_statement(node, replacement + split)
    return False

  @staticmethod
  def _bound_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
      return alias.asname.name.value
    dotted = _dotted(alias.name)
    assert dotted is not None
    return dotted.split(".")[0]

  def _private(self, node: cst.CSTNode) -> None:
    self.problems.append(Problem(self._line(node), self._code(node),
                                 names.PRIVATE_HINT))

  # Names, attribute chains, aliases.

  def visit_Name(self, node: cst.Name) -> None:
    self._uses[node.value].append(self._line(node))
    self._all_names.add(node.value)

  def visit_Attribute(self, node: cst.Attribute) -> bool:
    path = self._resolve(node)
    if path is None:
      # Not a chain on a followed name: only the object it starts from can
      # hold one (`f(tf).estimator` does not), the attribute is no name use.
      node.value.visit(self)
      return False
    target = names.target_of(path)
    hint = names.unknown_name_hint(path) if target is not None else None
    if hint is not None:
      # Left as it was, and reported once for the whole chain; its name stays in use.
      self.problems.append(Problem(self._line(node), self._code(node), hint))
      root = _dotted(node)
      assert root is not None
      self._uses[root.split(".")[0]].append(self._line(node))
      return False
    if target is not None:
      self.plan.chains[id(node)] = target
      self._needed.add(_module_of(target))
      namespace = _namespace_of(path)
      if "keras" in namespace:
        kind = "keras"
      elif id(node) in self._alias_values and path == namespace:
        kind = "module alias"
      else:
        kind = "attribute"
      self.changes.append(Change(kind, self._line(node), self._code(node),
                                 target))
      return False
    if _is_tensorflow_estimator(path):
      # Reported once, for the whole chain; its name stays in use.
      self.problems.append(Problem(self._line(node), self._code(node),
                                   _unmapped_hint(path)))
      root = _dotted(node)
      assert root is not None
      self._uses[root.split(".")[0]].append(self._line(node))
      return False
    node.value.visit(self)
    return False

  def visit_Assign(self, node: cst.Assign) -> None:
    if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
      self._alias_values.add(id(node.value))

  def leave_Assign(self, original_node: cst.Assign) -> None:
    for target in original_node.targets:
      if isinstance(target.target, cst.Name):
        name = target.target.value
        if name == _ROOT:
          self._root_taken = True
        path = (self._resolve(original_node.value)
                if len(original_node.targets) == 1 else None)
        self._bind(name, path)

  def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
    if node.name.value == _ROOT:
      self._root_taken = True
    self._enter_scope(node.params)

  def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
    self._leave_scope()

  def visit_Lambda(self, node: cst.Lambda) -> None:
    self._enter_scope(node.params)

  def leave_Lambda(self, original_node: cst.Lambda) -> None:
    self._leave_scope()

  def _enter_scope(self, params: cst.Parameters) -> None:
    # A function's parameters hide the module's names (`def f(tf): ...`), and
    # what the function binds (a local `import tensorflow as tf`) ends with it.
    self._scopes.append(dict(self._bindings))
    for param in [*params.posonly_params, *params.params,
                  *params.kwonly_params]:
      self._bindings.pop(param.name.value, None)
    for star in (params.star_arg, params.star_kwarg):
      if isinstance(star, cst.Param):
        self._bindings.pop(star.name.value, None)

  def _leave_scope(self) -> None:
    self._bindings = self._scopes.pop()

  def visit_ClassDef(self, node: cst.ClassDef) -> None:
    if node.name.value == _ROOT:
      self._root_taken = True

  def visit_Param(self, node: cst.Param) -> None:
    if node.name.value == _ROOT:
      self._root_taken = True

  # Imports and attribute look-ups by string.

  def visit_Call(self, node: cst.Call) -> None:
    func = _dotted(node.func)
    if func is None or not node.args:
      return
    if func in _DYNAMIC_IMPORTERS:
      name = _string_value(node.args[0].value)
      if name is None:
        return
      target = names.target_of(name)
      if target is not None:
        hint = (f"a module named by a string is looked up when the program "
                f"runs, so it is not rewritten: import `{target}` instead "
                f"(`import {_module_of(target)}`), or run the program "
                f"unchanged with `python -m estimator_lite.run`")
      elif _is_tensorflow_estimator(name):
        hint = _unmapped_hint(name)
      else:
        return
      self.problems.append(Problem(self._line(node), self._code(node), hint))
    elif func in _ATTRIBUTE_LOOKUPS and len(node.args) >= 2:
      owner = self._resolve(node.args[0].value)
      attr = _string_value(node.args[1].value)
      if owner is None or attr is None:
        return
      target = names.target_of(f"{owner}.{attr}")
      if target is None:
        return
      hint = (f"an attribute looked up by a string is not rewritten: use "
              f"`{target}` (after `import {_module_of(target)}`) instead")
      self.problems.append(Problem(self._line(node), self._code(node), hint))

  # The decisions that need the whole module.

  def leave_Module(self, original_node: cst.Module) -> None:
    self._decide_conditional_imports()
    plan = self.plan
    modules = sorted(m for m in self._needed if m not in self._existing_imports)
    plan.imports = modules
    if self._root_taken:
      plan.aliases = {m: self._fresh_alias(m) for m in self._needed}
      plan.imports = sorted(self._needed)
    if self._first_tf_import is not None:
      plan.import_at = self._first_tf_import
      plan.take_leading_lines = True
    else:
      plan.import_at = self._after_imports
    for module in plan.imports:
      alias = plan.aliases.get(module)
      line = (self._line(original_node.body[plan.import_at])
              if plan.import_at < len(original_node.body) else 1)
      self.changes.append(Change(
          "import added", line, "",
          f"import {module}" + (f" as {alias}" if alias else "")))
    self.changes.sort(key=lambda change: change.line)
    self.problems.sort(key=lambda problem: problem.line)

  def _fresh_alias(self, module: str) -> str:
    alias = module.replace(".", "_") + "_"
    while alias in self._all_names:
      alias += "_"
    return alias

  def _decide_conditional_imports(self) -> None:
    # Per statement: the aliases that go, and those that change.
    by_statement: Dict[int, Tuple[cst.BaseSmallStatement,
                                  Dict[int, Optional[cst.ImportAlias]]]] = {}
    for name, stmt, alias, if_used in self._conditional:
      uses = self._uses.get(name, [])
      entry = by_statement.setdefault(id(stmt), (stmt, {}))
      if uses:
        entry[1][id(alias)] = if_used
        if _is_tensorflow_estimator(_dotted(alias.name) or ""):
          lines = ", ".join(str(line) for line in sorted(set(uses)))
          self.problems.append(Problem(
              self._line(stmt), self._code(stmt),
              f"tensorflow_estimator does not import on TensorFlow 2.16+; "
              f"`{name}` is still used (line {lines}): port those uses to "
              f"estimator_lite by hand, then remove the import"))
      else:
        entry[1][id(alias)] = None
    for key, (stmt, decisions) in by_statement.items():
      assert isinstance(stmt, cst.Import)
      planned = self.plan.statements.get(key)
      base = planned[0] if planned else stmt
      assert isinstance(base, cst.Import)
      kept: List[cst.ImportAlias] = []
      for original, current in zip(stmt.names, base.names):
        if id(original) not in decisions:
          kept.append(current)
        elif decisions[id(original)] is not None:
          replacement = decisions[id(original)]
          assert replacement is not None
          kept.append(replacement)
      if kept:
        if not (len(kept) == len(base.names) and all(
            a is b for a, b in zip(kept, stmt.names))):
          self._plan_statement(stmt, [base.with_changes(
              names=_with_last_comma(kept, stmt.names))])
      else:
        self._plan_statement(stmt, [])
        self.changes.append(Change("import removed", self._line(stmt),
                                   self._code(stmt), ""))
    self._record_import_changes()

  def _record_import_changes(self) -> None:
    # Every statement with a non-empty replacement is an "import" rewrite.
    for key, node in self._planned.items():
      replacement = self.plan.statements[key]
      if not replacement:
        continue
      after = "; ".join(cst.Module([]).code_for_node(s).strip()
                        for s in replacement)
      before = self._code(node)
      if after != before:
        self.changes.append(Change("import", self._line(node), before, after))

  def _plan_statement(self, node: cst.BaseSmallStatement,
                      replacement: List[cst.BaseSmallStatement]) -> None:
    self.plan.statements[id(node)] = replacement
    self._planned[id(node)] = node


class _Editor(cst.CSTTransformer):
  """Applies a `_Plan` to the tree `_Analyzer` planned it on."""

  def __init__(self, plan: _Plan) -> None:
    super().__init__()
    self._plan = plan
    # Statement lines (by id of the node returned) -> the lines replacing them.
    self._lines: Dict[int, Tuple[cst.SimpleStatementLine,
                                 List[cst.SimpleStatementLine]]] = {}

  def spelled(self, target: str) -> str:
    module = _module_of(target)
    alias = self._plan.aliases.get(module)
    return target if alias is None else alias + target[len(module):]

  def leave_Attribute(self, original_node: cst.Attribute,
                      updated_node: cst.Attribute) -> cst.BaseExpression:
    target = self._plan.chains.get(id(original_node))
    if target is None:
      return updated_node
    return _name_node(self.spelled(target)).with_changes(
        lpar=original_node.lpar, rpar=original_node.rpar)

  def _small(self, original: Sequence[cst.BaseSmallStatement],
             updated: Sequence[cst.BaseSmallStatement]
             ) -> Tuple[List[List[cst.BaseSmallStatement]], bool]:
    groups: List[List[cst.BaseSmallStatement]] = []
    changed = False
    for before, after in zip(original, updated):
      replacement = self._plan.statements.get(id(before))
      if replacement is None:
        groups.append([after])
      else:
        groups.append(list(replacement))
        changed = True
    return groups, changed

  def leave_SimpleStatementLine(
      self, original_node: cst.SimpleStatementLine,
      updated_node: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
    groups, changed = self._small(original_node.body, updated_node.body)
    if not changed:
      return updated_node
    if len(groups) == 1:
      # One statement became several (a split `from` import): one per line,
      # the first keeping the line's comments.
      lines = [updated_node.with_changes(body=[stmt]) if i == 0 else
               cst.SimpleStatementLine(body=[stmt])
               for i, stmt in enumerate(groups[0])]
    else:
      body = [s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
              for group in groups for s in group]
      lines = [updated_node.with_changes(body=body)] if body else []
    self._lines[id(updated_node)] = (updated_node, lines)
    return updated_node

  def leave_SimpleStatementSuite(
      self, original_node: cst.SimpleStatementSuite,
      updated_node: cst.SimpleStatementSuite) -> cst.SimpleStatementSuite:
    groups, changed = self._small(original_node.body, updated_node.body)
    if not changed:
      return updated_node
    body = [s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            for group in groups for s in group]
    return updated_node.with_changes(body=body or [cst.Pass()])

  def _rebuild(self, body: Sequence[cst.BaseStatement],
               insert_at: Optional[int] = None,
               inserted: Sequence[cst.SimpleStatementLine] = (),
               ) -> Tuple[List[cst.BaseStatement], List[cst.EmptyLine]]:
    """The body with planned lines replaced; comments of removed lines kept.

    Returns:
      The new statements, and the comment lines of removed statements that
      had no statement after them (they go to the block's footer).
    """
    out: List[cst.BaseStatement] = []
    carried: List[cst.EmptyLine] = []
    for index, any_stmt in enumerate(body):
      assert isinstance(any_stmt, (cst.SimpleStatementLine,
                                   cst.BaseCompoundStatement))
      stmt: _Statement = any_stmt
      entry = self._lines.get(id(stmt))
      replacement: List[_Statement] = (
          [stmt] if entry is None or entry[0] is not stmt else list(entry[1]))
      if index == insert_at and inserted:
        new: List[_Statement] = list(inserted)
        if self._plan.take_leading_lines:
          # The added imports go where the first TensorFlow import was, after
          # its blank lines and comments.
          new[0] = new[0].with_changes(leading_lines=stmt.leading_lines)
          if replacement:
            replacement[0] = replacement[0].with_changes(leading_lines=[])
        replacement = new + replacement
      if not replacement:
        carried.extend(stmt.leading_lines)
        continue
      if carried:
        first = replacement[0]
        replacement[0] = first.with_changes(
            leading_lines=[*carried, *first.leading_lines])
        carried = []
      out.extend(replacement)
    if insert_at is not None and insert_at >= len(body) and inserted:
      out.extend(inserted)
    return out, carried

  def leave_IndentedBlock(self, original_node: cst.IndentedBlock,
                          updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
    body, carried = self._rebuild(updated_node.body)
    if not body:
      # A block needs a statement; the removed one's comments stay above it.
      body = [cst.SimpleStatementLine(body=[cst.Pass()], leading_lines=carried)]
      carried = []
    return updated_node.with_changes(
        body=body, footer=[*carried, *updated_node.footer])

  def leave_Module(self, original_node: cst.Module,
                   updated_node: cst.Module) -> cst.Module:
    inserted = [
        cst.SimpleStatementLine(body=[cst.Import(names=[_import_alias(
            module, self._plan.aliases.get(module))])])
        for module in self._plan.imports]
    body, carried = self._rebuild(updated_node.body, self._plan.import_at,
                                  inserted)
    return updated_node.with_changes(
        body=body, footer=[*carried, *updated_node.footer])


def rewrite(module: cst.Module) -> RewriteResult:
  """Rewrites every way `module` reaches tf.estimator to estimator_lite.

  Args:
    module: a parsed module (libcst.parse_module).

  Returns:
    The rewritten module (`module` itself when there was nothing to do), the
    changes and the problems.
  """
  wrapper = metadata.MetadataWrapper(module, unsafe_skip_copy=True)
  analyzer = _Analyzer(module)
  wrapper.visit(analyzer)
  plan = analyzer.plan
  problems = analyzer.problems
  if not (plan.chains or plan.statements or plan.imports):
    return RewriteResult(module, [], problems)
  editor = _Editor(plan)
  changes = [
      dataclasses.replace(change, after=editor.spelled(change.after))
      if change.kind in ("attribute", "module alias", "keras") else change
      for change in analyzer.changes]
  new_module = module.visit(editor)
  return RewriteResult(new_module, changes, problems)
