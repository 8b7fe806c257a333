modle "openai" "local" {}
widget "x" {}
