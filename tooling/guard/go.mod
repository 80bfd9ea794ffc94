module iac-tooling/tfguard

go 1.22
