# Uses the example plugin. Build it first (from the repository root):
#
#   go build -o examples/plugin-acme/acme-plugin ./examples/plugin-acme
#   hayloft run examples/plugin-acme/acme.hcl
plugin "acme" {
  source = "./acme-plugin"
}

task "arith" "small" {
  count = 10
}

model "baseline" "extractive" {}

eval "arith" {
  task    = task.arith.small
  models  = [model.baseline.extractive]
  scorers = [scorer.numeric.strict]
}

scorer "numeric" "strict" {
  tolerance = 0
}
