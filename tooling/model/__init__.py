"""The repository as data: trees, the HCL reader, the Terragrunt evaluator, units and the model."""
