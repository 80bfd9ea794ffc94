// iac-clean-exec runs a program with an environment made only of its arguments.
//
// Usage: iac-clean-exec [-keep NAME | -set NAME=VALUE]... -- PROGRAM [ARG]...
//
// Terragrunt starts root.hcl's working-copy check with the environment a unit's
// extra_arguments may extend (env_vars): LD_PRELOAD there would load a library from
// the pull request into the check's shell and interpreter before either runs a line.
// `env -i` does not help: env itself is a dynamically linked program. This one is
// built statically (CGO_ENABLED=0), so no dynamic loader ever runs for it, and it
// replaces itself (execve, same process id) with PROGRAM, whose environment holds
// only the variables named with -keep (taken from its own, when set) and -set.
// PROGRAM must be an absolute path: no PATH search.
package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

func main() {
	args := os.Args[1:]
	env := []string{}
	for len(args) > 1 && args[0] != "--" {
		switch args[0] {
		case "-keep":
			if value, ok := os.LookupEnv(args[1]); ok {
				env = append(env, args[1]+"="+value)
			}
		case "-set":
			if !strings.Contains(args[1], "=") {
				fail(2, "-set %q: give NAME=VALUE", args[1])
			}
			env = append(env, args[1])
		default:
			fail(2, "unknown option %q", args[0])
		}
		args = args[2:]
	}
	if len(args) < 2 || args[0] != "--" || !strings.HasPrefix(args[1], "/") {
		fail(2, "usage: iac-clean-exec [-keep NAME | -set NAME=VALUE]... -- /ABSOLUTE/PROGRAM [ARG]...")
	}
	program := args[1:]
	err := syscall.Exec(program[0], program, env)
	fail(127, "%s: %v", program[0], err)
}

func fail(code int, format string, values ...any) {
	fmt.Fprintf(os.Stderr, "iac-clean-exec: "+format+"\n", values...)
	os.Exit(code)
}
