"""Writes reference.golden.json: the sha256 and code-point length of every
reference prompt (context + separator + question), computed the slow, literal
way upstream does it (re-split and re-join the text for every star), so the Go
fast path is checked against an independent implementation.

Run from this directory:
  python3 golden.py /work/shared/data/haystack/zh/The_Story_of_the_Stone.txt \
      "$(go env GOROOT)/src/testdata/Isaac.Newton-Opticks.txt"
"""
import ast, hashlib, json, re, sys

zh_path, en_path = sys.argv[1], sys.argv[2]

def stars(name):
    with open("../data/" + name, encoding="utf-8") as f:
        return ast.literal_eval(f.readline())["32"]

A, R = stars("a_stars.txt"), stars("r_stars.txt")

Q = {
    ("zh", "acquisition"): "在这个月光皎洁、云雾缭绕的夜晚，小企鹅正望向天空，全神贯注地数★。请帮助小企鹅收集所数★的颗数，按照如下格式：{\"小企鹅\":[x,x,x,...]}，不要求和，[x,x,x,...]中数字为小企鹅每次数★的颗数，仅以JSON格式输出结果，不需要输出任何解释。",
    ("zh", "reasoning"): "在这个月光皎洁、云雾缭绕的夜晚，小企鹅正望向天空，全神贯注地数★。请帮助小企鹅收集所数★的正确颗数，按照如下格式：{\"小企鹅\":[x,x,x,...]}，不要求和，[x,x,x,...]中数字为小企鹅正确数★的颗数，仅以JSON格式输出结果，不需要输出任何解释。",
    ("en", "acquisition"): "On this moonlit and misty night, the little penguin is looking up at the sky and concentrating on counting ★. Please help the little penguin collect the number of ★, for example: {\"little_penguin\": [x, x, x,...]}. The summation is not required, and the numbers in [x, x, x,...] represent the counted number of ★ by the little penguin. Only output the results in JSON format without any explanation.",
    ("en", "reasoning"): "On this moonlit and misty night, the little penguin is looking up at the sky and concentrating on counting ★. Please help the little penguin collect the correct number of ★, for example: {\"little_penguin\": [x, x, x,...]}. The summation is not required, and the numbers in [x, x, x,...] represent the correctly counted number of ★ by the little penguin. Only output the results in JSON format without any explanation.",
}

def star(lang, mode, i):
    a, r = A[i], R[i]
    if lang == "zh":
        if mode == "acquisition":
            return "\n小企鹅数了%d颗★\n" % a
        return "\n小企鹅数了%d颗★，但发现数错了，于是又数了一遍，这次数对了，是%d颗★\n" % (r, a)
    if mode == "acquisition":
        return "\nThe little penguin counted %d ★\n" % a
    return ("\nThe little penguin counted %d ★, but found that a mistake had been made, "
            "so the counting was done again, and this time %d ★ was counted correctly.\n" % (r, a))

def clean_zh(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            out.append(line.strip().replace("------------", " ").replace(" ", ""))
    text = "".join(out)
    text = re.sub(r"""[!"#$%&'()*+,\-./:;<=>?@\[\]^_`{|}~]""", "", text)
    return re.sub("[a-zA-Z]", "", text)

def clean_en(path):
    with open(path, encoding="utf-8") as f:
        return f.read().replace("\n", " ")

def build(lang, mode, hay, j, m=32):
    step = j // m
    text = hay[:j] if lang == "zh" else " ".join(hay.split(" ")[:j])
    for i in range(m):
        s = star(lang, mode, i)
        if lang == "zh":
            at = (i + 1) * step + len(s) * i
            text = text[:at] + s + text[at:]
        else:
            units = text.split(" ")
            at = (i + 1) * step + len(s.split(" ")) * i
            text = " ".join(units[:at]) + s + " ".join(units[at:])
    return text + "\n\n\n\n" + Q[(lang, mode)]

golden = []
for lang, path, scalar in (("zh", zh_path, 0.7), ("en", en_path, 0.8)):
    hay = clean_zh(path) if lang == "zh" else clean_en(path)
    for mode in ("acquisition", "reasoning"):
        for length in range(4000, 128001, 4000):
            j = int(length * scalar)
            prompt = build(lang, mode, hay, j)
            golden.append({"language": lang, "mode": mode, "length": length,
                           "codepoints": len(prompt),
                           "sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest()})
with open("reference.golden.json", "w") as f:
    json.dump(golden, f, indent=1)
    f.write("\n")
