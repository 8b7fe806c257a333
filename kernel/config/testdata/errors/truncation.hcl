model "openai" "local" {
  truncation = "midle"
}
model "openai" "other" {
  truncation = "both"
}
