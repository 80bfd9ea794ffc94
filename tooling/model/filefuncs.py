"""HCL functions that look at files, evaluated by the model as Terragrunt does.

OpenTofu's own file functions (``file``, ``fileexists``, ``templatefile``,
``filebase64``...) read relative to the file they are written in, an included
file too (Terragrunt evaluates them with that file's folder as base);
Terragrunt's functions (``read_terragrunt_config``, ``read_tfvars_file``,
``sops_decrypt_file``, ``find_in_parent_folders``...) relative to the unit being
parsed: :meth:`FileFunctions.base_of` says which.

``file()`` returns the file's text (``yamldecode``/``jsondecode`` then give its
data, see :data:`tooling.model.exprs.PURE_FUNCTIONS`), ``fileexists()`` whether
it is there. Each records what it looked at as read, so a change there (adding
the file included) selects the unit. They read the tree the model is built
from (the working tree or a commit): no process, no network.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any

from tooling.errors import ToolingError
from tooling.model.exprs import UNKNOWN

if TYPE_CHECKING:
    from tooling.model.configfiles import ConfigFile, Loader


#: OpenTofu's file functions: a relative path is read from the folder of the file
#: the call is written in (checked against ``terragrunt render``)
OWN_FOLDER_FUNCTIONS = frozenset(
    {
        "file",
        "fileexists",
        "fileset",
        "templatefile",
        "filebase64",
        "filemd5",
        "filesha1",
        "filesha256",
        "filesha512",
        "filebase64sha256",
        "filebase64sha512",
    }
)


class FileFunctions:
    """Mixed into :class:`tooling.model.evaluator.UnitEvaluator` (its ``fn_*`` look-up)."""

    loader: Loader

    @staticmethod
    def base_of(name: str, file: ConfigFile) -> str:
        """The folder a relative path given to function ``name`` in ``file`` is read from."""
        if name in OWN_FOLDER_FUNCTIONS:
            return posixpath.dirname(file.path) or "."
        return file.scope.dir

    def rel(self, path: str, base: str | None = None) -> str:
        raise NotImplementedError

    def read(self, rel: str) -> None:
        raise NotImplementedError

    def unresolved(self, file: ConfigFile, what: str) -> None:
        raise NotImplementedError

    def fn_file(self, args: list[Any], file: ConfigFile) -> Any:
        if not args or not isinstance(args[0], str):
            self.unresolved(file, "the file file() reads")
            return UNKNOWN
        rel = self.rel(args[0], self.base_of("file", file))
        self.read(rel)
        tree = self.loader.tree
        rel = tree.realpath(rel)  # through a linked folder: the file it points at
        if not tree.exists(rel) or tree.is_dir(rel):
            # an error in Terragrunt too; try() and can() catch it
            raise ToolingError(f"{file.path}: file(): {rel} does not exist")
        try:
            return tree.read(rel).decode("utf-8")
        except UnicodeDecodeError:
            raise ToolingError(f"{file.path}: file(): {rel} is not UTF-8 text") from None

    def fn_fileexists(self, args: list[Any], file: ConfigFile) -> Any:
        if not args or not isinstance(args[0], str):
            self.unresolved(file, "the file fileexists() looks for")
            return UNKNOWN
        rel = self.rel(args[0], self.base_of("fileexists", file))
        # read: creating or deleting the file changes the answer
        self.read(rel)
        tree = self.loader.tree
        rel = tree.realpath(rel)
        return tree.exists(rel) and not tree.is_dir(rel)
