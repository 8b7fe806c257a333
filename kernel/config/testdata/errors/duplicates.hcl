model "openai" "local" {}
model "openai" "local" { max_tokens = 1 }
plugin "acme" { source = "a" }
plugin "acme" { source = "b" }
task "niah" "small" {}
eval "x" {
  task   = task.niah.small
  models = [model.openai.local]
}
eval "x" {
  task   = task.niah.small
  models = [model.openai.local, model.openai.local]
}
