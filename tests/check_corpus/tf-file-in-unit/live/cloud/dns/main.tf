resource "terraform_data" "hand_made" {
  input = "not through a module"
}
