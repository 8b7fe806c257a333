stor = "x.db"
loglevel = "info"
plugin "acme" {
  source = "./acme"
  sha265 = "abc"
}
task "niah" "small" {}
model "m" "a" {}
eval "e" {
  task  = task.niah.small
  model = [model.m.a]
}
