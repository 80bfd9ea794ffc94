"""Generate a large Terragrunt live tree for benchmarks and cross-checks.

Shape (realistic for a big foundation): ``live/t<i>/tier.hcl`` per tier,
``live/t<i>/g<j>/group.hcl`` shared locals read with read_terragrunt_config,
``live/t<i>/g<j>/shared/settings.yaml`` read with file() by every unit of the
group, units ``live/t<i>/g<j>/u<k>/terragrunt.hcl`` (about 40 lines each) that
include root.hcl and their tier file, pin a module by tag, and depend on the
previous unit of their group (dependency chains: each unit's input
``upstream`` is its upstream's output ``id``, mocked for plan and validate, so
a unit plans before its upstream is applied); every tenth unit also reads a
JSON file that sits in *another* unit's folder.

The modules the units pin (``terraform-mod-<m>``, m in 0..19, tags v1.0.0 to
v1.4.0) exist once :func:`module_repos` builds them: local git repositories of
stand-in modules (OpenTofu's built-in ``terraform_data``, no provider plugin),
which ``IAC_MODULE_REWRITE`` maps the units' URLs onto, so the tree plans
offline with local state (benchmarks/bench_legs.py).

Usage: python benchmarks/gentree.py DEST --units 1000
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

UNIT = """\
# {path}: generated unit {index} of group {group}.
include "root" {{
  path = find_in_parent_folders("root.hcl")
}}

include "tier" {{
  path   = find_in_parent_folders("tier.hcl")
  expose = true
}}

locals {{
  group    = read_terragrunt_config(find_in_parent_folders("group.hcl"))
  settings = yamldecode(file("${{get_terragrunt_dir()}}/../shared/settings.yaml"))
  name     = "${{local.group.locals.prefix}}-u{index}"
{extra_local}}}

terraform {{
  source = "git::https://git.example.com/platform-modules/terraform-mod-{module}.git?ref=v1.{minor}.0"
}}
{dependency}
inputs = {{
  name        = local.name
  environment = local.settings.environment
  owner       = "platform"
  cost_center = "cc-{group}"
  replicas    = {replicas}
  labels = {{
    tier  = include.tier.locals.tier
    group = "{group}"
    unit  = "u{index}"
  }}
  tags = ["generated", "benchmark", "{group}"]
{upstream}}}
"""

DEPENDENCY = """
dependency "previous" {{
  config_path = "../u{previous}"

  mock_outputs = {{
    id = "mock"
  }}
  mock_outputs_allowed_terraform_commands = ["validate", "plan"]
}}
"""

UPSTREAM = "  upstream = dependency.previous.outputs.id\n"

#: the module repositories' URL prefix, as the units write it
MODULES_URL = "https://git.example.com/platform-modules/"
MODULE_COUNT = 20
MODULE_TAGS = tuple(f"v1.{minor}.0" for minor in range(5))

MODULE = """\
# terraform-mod-{module} {tag}: a stand-in module for generated units.
variable "name" {{
  type = string
}}

variable "environment" {{
  type = string
}}

variable "owner" {{
  type = string
}}

variable "cost_center" {{
  type = string
}}

variable "replicas" {{
  type = number
}}

variable "labels" {{
  type = map(string)
}}

variable "tags" {{
  type = list(string)
}}

variable "upstream" {{
  type    = string
  default = ""
}}

resource "terraform_data" "this" {{
  input = {{
    module      = "terraform-mod-{module}"
    release     = "{tag}"
    name        = var.name
    environment = var.environment
    owner       = var.owner
    cost_center = var.cost_center
    replicas    = var.replicas
    labels      = var.labels
    tags        = var.tags
    upstream    = var.upstream
  }}
}}

output "id" {{
  value = terraform_data.this.id
}}
"""

TIER = """\
# live/{tier}/tier.hcl: tier facts, included by every unit below.
locals {{
  tier       = "{tier}"
  executor   = "{executor}"
  gate       = "auto"
  plan_on_pr = true
}}
"""

GROUP = """\
# group.hcl: locals shared by the units of one group (read_terragrunt_config).
locals {{
  prefix = "{tier}-{group}"
}}
"""


def generate(dest: Path, units: int, per_group: int = 10, groups_per_tier: int = 10) -> list[str]:
    """Write the tree under ``dest``; return the unit paths."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "root.hcl", dest / "root.hcl")
    shutil.copy2(REPO / ".tool-versions", dest / ".tool-versions")
    shutil.copy2(REPO / "policy.toml", dest / "policy.toml")
    shutil.copy2(REPO / "tasks.py", dest / "tasks.py")
    shutil.copy2(REPO / ".gitignore", dest / ".gitignore")
    paths: list[str] = []
    for n in range(units):
        t, rest = divmod(n, per_group * groups_per_tier)
        g, k = divmod(rest, per_group)
        tier, group = f"t{t}", f"g{g}"
        tier_dir = dest / "live" / tier
        if not (tier_dir / "tier.hcl").exists():
            tier_dir.mkdir(parents=True, exist_ok=True)
            (tier_dir / "tier.hcl").write_text(
                TIER.format(tier=tier, executor="hosted" if t % 2 == 0 else "lan")
            )
        group_dir = tier_dir / group
        if not (group_dir / "group.hcl").exists():
            (group_dir / "shared").mkdir(parents=True, exist_ok=True)
            (group_dir / "group.hcl").write_text(GROUP.format(tier=tier, group=group))
            (group_dir / "shared" / "settings.yaml").write_text(f"environment: {tier}-{group}\n")
        unit_dir = group_dir / f"u{k}"
        unit_dir.mkdir(parents=True, exist_ok=True)
        path = f"live/{tier}/{group}/u{k}"
        extra = ""
        if k == 0:
            # the first unit of each group keeps a file that others read
            (unit_dir / "peers.json").write_text('{"peers": []}\n')
        elif k % 10 == 9 or k == 5:
            extra = '  peers    = jsondecode(file("${get_terragrunt_dir()}/../u0/peers.json"))\n'
        (unit_dir / "terragrunt.hcl").write_text(
            UNIT.format(
                path=path,
                index=k,
                group=group,
                module=n % 20,
                minor=n % 5,
                replicas=1 + k % 3,
                extra_local=extra,
                dependency=DEPENDENCY.format(previous=k - 1) if k > 0 else "",
                upstream=UPSTREAM if k > 0 else "",
            )
        )
        paths.append(path)
    return paths


def module_repos(dest: Path) -> str:
    """Build the modules the generated units pin under ``dest`` (one git repository per
    module, one commit and annotated tag per release); return the ``IAC_MODULE_REWRITE``
    value that maps the units' module URLs onto them."""
    from benchenv import sh  # the bench identity; benchmarks/ is on the path of its importers

    def git(repo: Path, *args: str) -> None:
        sh(repo, "git", *args, check=True)

    for module in range(MODULE_COUNT):
        repo = dest / f"terraform-mod-{module}.git"
        repo.mkdir(parents=True)
        git(repo, "init", "--quiet", "--initial-branch=main")
        for tag in MODULE_TAGS:
            (repo / "main.tf").write_text(MODULE.format(module=module, tag=tag))
            git(repo, "add", "--all")
            git(repo, "commit", "--quiet", "-m", f"release {tag}")
            git(repo, "tag", "-a", tag, "-m", f"release {tag}")
    return f"{MODULES_URL}={dest.resolve().as_uri()}/"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dest", type=Path)
    parser.add_argument("--units", type=int, default=1000)
    args = parser.parse_args()
    paths = generate(args.dest, args.units)
    print(f"generated {len(paths)} units under {args.dest}")


if __name__ == "__main__":
    main()
