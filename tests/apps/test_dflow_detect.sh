#!/usr/bin/env bash
# dflow-detect's data commands end to end. cocoeval on hand-made files: the
# 12-line summary, the JSON last line with hand-computed values. convert:
# COCO -> VOC -> COCO exactly and COCO -> YOLO -> COCO within float
# precision. Bad input refused with the file and entry named, a non-zero exit
# and no crash. generate: a synthetic dataset whose annotations cocoeval
# reads back (perfect detections score AP 1), the same bytes again from the
# same seed on more threads, sprites from IDX files, and bad options.
# Usage: test_dflow_detect.sh PATH/TO/dflow-detect
set -u
EXE=${1:?usage: $0 PATH/TO/dflow-detect}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# expect_error "what must appear" CMD...: CMD must fail cleanly (exit 1) and say it.
expect_error() {
  local want=$1
  shift
  "$@" > "$TMP/out.txt" 2> "$TMP/err.txt"
  local rc=$?
  [[ $rc == 1 ]] || { cat "$TMP/out.txt" "$TMP/err.txt"; fail "exit $rc, not 1: $*"; }
  grep -qF -- "$want" "$TMP/err.txt" ||
    { cat "$TMP/err.txt"; fail "no message naming '$want': $*"; }
}

# Category 1: one large object, a false positive ranked above the hit (AP 1/2).
# Category 2: a small object found exactly (AP 1). Category 3: no objects.
cat > "$TMP/gt.json" <<'JSON'
{"images": [{"id": 1, "file_name": "a.png", "width": 640, "height": 480},
            {"id": 2, "file_name": "b.png", "width": 640, "height": 480}],
 "annotations": [
   {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 100, 100], "area": 10000,
    "iscrowd": 0},
   {"id": 2, "image_id": 2, "category_id": 2, "bbox": [10, 10, 20, 20], "area": 400, "iscrowd": 0}],
 "categories": [{"id": 1, "name": "box"}, {"id": 2, "name": "dot"}, {"id": 3, "name": "none"}]}
JSON
cat > "$TMP/dt.json" <<'JSON'
[{"image_id": 1, "category_id": 1, "bbox": [300, 300, 100, 100], "score": 0.9},
 {"image_id": 1, "category_id": 1, "bbox": [0, 0, 100, 100], "score": 0.8},
 {"image_id": 2, "category_id": 2, "bbox": [10, 10, 20, 20], "score": 0.7},
 {"image_id": 2, "category_id": 3, "bbox": [10, 10, 20, 20], "score": 0.7}]
JSON
"$EXE" cocoeval --gt "$TMP/gt.json" --dt "$TMP/dt.json" > "$TMP/out.txt" 2> "$TMP/err.txt" ||
  { cat "$TMP/out.txt" "$TMP/err.txt"; fail "cocoeval"; }
cat "$TMP/out.txt"
[[ $(wc -l < "$TMP/out.txt") == 13 ]] || fail "expected 12 summary lines and the JSON line"
grep -qxF ' Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.750' \
  "$TMP/out.txt" || fail "AP line (want (1/2 + 1) / 2)"
grep -qxF ' Average Precision  (AP) @[ IoU=0.50:0.95 | area=medium | maxDets=100 ] = -1.000' \
  "$TMP/out.txt" || fail "APm line (no medium objects)"
grep -qxF ' Average Recall     (AR) @[ IoU=0.50:0.95 | area=   all | maxDets=  1 ] = 0.500' \
  "$TMP/out.txt" || fail "AR1 line (the first box of category 1 is the false positive)"
tail -n 1 "$TMP/out.txt" | python3 -c '
import json, sys
s = json.loads(sys.stdin.read())
want = {"AP": 0.75, "AP50": 0.75, "AP75": 0.75, "APs": 1, "APm": -1, "APl": 0.5,
        "AR1": 0.5, "AR10": 1, "AR100": 1, "ARs": 1, "ARm": -1, "ARl": 1}
assert list(s) == list(want), list(s)
for k, v in want.items():
    assert abs(s[k] - v) < 1e-12, (k, s[k], v)
' || fail "JSON last line"

# Bad input: named, exit 1, nothing on stdout.
echo '[{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1},
       {"image_id": 9, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1}]' > "$TMP/bad_image.json"
expect_error "detections[1]" "$EXE" cocoeval --gt "$TMP/gt.json" --dt "$TMP/bad_image.json"
grep -qF "bad_image.json" "$TMP/err.txt" || fail "the detections file is not named"
grep -qF "image_id 9" "$TMP/err.txt" || fail "the unknown image id is not named"
[[ ! -s $TMP/out.txt ]] || fail "printed results for a bad file"
echo '[{"image_id": 1, "category_id": 4, "bbox": [0, 0, 1, 1], "score": 1}]' > "$TMP/bad_cat.json"
expect_error "category_id 4" "$EXE" cocoeval --gt "$TMP/gt.json" --dt "$TMP/bad_cat.json"
echo '[{"image_id": 1, ' > "$TMP/truncated.json"
expect_error "truncated.json': not valid JSON" \
  "$EXE" cocoeval --gt "$TMP/gt.json" --dt "$TMP/truncated.json"
sed 's/"width": 640, "height": 480}]/"width": 640, "height": -480}]/' "$TMP/gt.json" \
  > "$TMP/bad_gt.json"
expect_error "images[1] (id 2): negative size 640x-480" \
  "$EXE" cocoeval --gt "$TMP/bad_gt.json" --dt "$TMP/dt.json"
expect_error "missing.json" "$EXE" cocoeval --gt "$TMP/missing.json" --dt "$TMP/dt.json"
"$EXE" cocoeval --gt "$TMP/gt.json" > /dev/null 2>&1 && fail "accepted a missing --dt"

# convert: two images (tiny PNGs, whose headers YOLO reads), three objects.
mkdir -p "$TMP/coco/images"
python3 - "$TMP/coco/images" <<'PY'
import struct, sys, zlib
def png(path, width, height):
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff))
    rows = b"".join(b"\0" + b"\0" * 3 * width for _ in range(height))
    with open(path, "wb") as f:
        header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) +
                chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
png(sys.argv[1] + "/a.png", 64, 48)
png(sys.argv[1] + "/b.png", 30, 20)
PY
cat > "$TMP/coco/annotations.json" <<'JSON'
{"images": [{"id": 1, "file_name": "images/a.png", "width": 64, "height": 48},
            {"id": 2, "file_name": "images/b.png", "width": 30, "height": 20}],
 "annotations": [
   {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 64, 48], "area": 3072, "iscrowd": 0},
   {"id": 2, "image_id": 1, "category_id": 2, "bbox": [3, 4, 10, 5], "area": 50, "iscrowd": 0},
   {"id": 3, "image_id": 2, "category_id": 2, "bbox": [29, 19, 1, 1], "area": 1, "iscrowd": 0}],
 "categories": [{"id": 1, "name": "bird"}, {"id": 2, "name": "car"}]}
JSON
convert() {
  "$EXE" convert --data "$1" --out "$2" --format "$3" > "$TMP/out.txt" 2> "$TMP/err.txt" ||
    { cat "$TMP/out.txt" "$TMP/err.txt"; fail "convert $1 -> $3"; }
  cat "$TMP/out.txt"
  grep -qF "2 images, 3 objects, 2 classes" "$TMP/out.txt" || fail "summary of $1 -> $3"
}
# same_coco A B TOLERANCE: the two instances files hold the same dataset.
same_coco() {
  python3 - "$1" "$2" "$3" <<'PY' || fail "$1 and $2 differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
tol = float(sys.argv[3])
assert a["images"] == b["images"] and a["categories"] == b["categories"], (a, b)
assert len(a["annotations"]) == len(b["annotations"])
for x, y in zip(a["annotations"], b["annotations"]):
    for k in ("id", "image_id", "category_id", "iscrowd"):
        assert x[k] == y[k], (x, y)
    for u, v in zip(x["bbox"] + [x["area"]], y["bbox"] + [y["area"]]):
        assert abs(u - v) <= tol * max(1, abs(v)), (x, y)
PY
}
convert "$TMP/coco" "$TMP/voc" voc
[[ -f $TMP/voc/Annotations/a.xml && -f $TMP/voc/JPEGImages/b.png ]] || fail "VOC layout"
grep -qF "<xmin>30</xmin>" "$TMP/voc/Annotations/b.xml" || fail "VOC pixels are 1-based"
convert "$TMP/voc" "$TMP/voc_coco" coco
mkdir -p "$TMP/voc/ImageSets/Main" && echo b > "$TMP/voc/ImageSets/Main/val.txt"
"$EXE" convert --data "$TMP/voc" --out "$TMP/voc_val" --format yolo --split val --voc-classes |
  grep -qF "1 images, 1 objects, 20 classes" || fail "convert --split val --voc-classes"
[[ $(sed -n 7p "$TMP/voc_val/classes.txt") == car ]] || fail "VOC's class order"
same_coco "$TMP/voc_coco/annotations.json" "$TMP/coco/annotations.json" 0
convert "$TMP/coco" "$TMP/yolo" yolo
[[ $(cat "$TMP/yolo/classes.txt") == $'bird\ncar' ]] || fail "YOLO classes.txt"
convert "$TMP/yolo" "$TMP/yolo_coco" coco
same_coco "$TMP/yolo_coco/annotations.json" "$TMP/coco/annotations.json" 1e-6

# Bad input: named, exit 1, nothing written.
echo "2 0.5 0.5 0.1 0.1" > "$TMP/yolo/labels/b.txt"
expect_error "labels/b.txt' line 1: class 2 is out of range" \
  "$EXE" convert --data "$TMP/yolo" --out "$TMP/bad_out" --format voc
[[ ! -e $TMP/bad_out ]] || fail "convert wrote output for a bad dataset"
compgen -G "$TMP/*.partial.*" > /dev/null && fail "convert left its staging folder behind"
expect_error "is not a detection dataset" \
  "$EXE" convert --data "$TMP/coco/images" --out "$TMP/bad_out" --format voc
expect_error "not an empty folder" "$EXE" convert --data "$TMP/coco" --out "$TMP/voc" --format yolo
"$EXE" convert --data "$TMP/coco" --out "$TMP/x" --format xml > /dev/null 2>&1 &&
  fail "accepted an unknown format"
# generate: images, then annotations.json naming them relative to --out.
gen() { "$EXE" generate --images 6 --size 96x80 --classes 3 --max-objects 4 --max-size 40 "$@"; }
gen --out "$TMP/scenes" --seed 4 --threads 1 > "$TMP/out.txt" 2> "$TMP/err.txt" ||
  { cat "$TMP/out.txt" "$TMP/err.txt"; fail "generate"; }
cat "$TMP/out.txt"
grep -qE '^wrote 6 images of 96x80 with [0-9]+ objects of 3 classes' "$TMP/out.txt" ||
  fail "generate's summary line"
python3 - "$TMP/scenes" "$TMP/perfect.json" <<'PY' || fail "generated annotations"
import json, os, sys
root, out = sys.argv[1], sys.argv[2]
gt = json.load(open(os.path.join(root, "annotations.json")))
assert [c["name"] for c in gt["categories"]] == ["circle", "square", "triangle"], gt["categories"]
assert len(gt["images"]) == 6 and gt["annotations"], "no objects"
for image in gt["images"]:
    assert image["file_name"] == "images/scene_%05d.png" % (image["id"] - 1), image
    assert os.path.getsize(os.path.join(root, image["file_name"])) > 0
for a in gt["annotations"]:
    x, y, w, h = a["bbox"]
    assert 0 <= x and 0 <= y and x + w <= 96 and y + h <= 80 and 12 <= min(w, h), a
    assert 0 < a["area"] <= w * h and 1 <= a["category_id"] <= 3, a
json.dump([{"image_id": a["image_id"], "category_id": a["category_id"], "bbox": a["bbox"],
            "score": 1.0} for a in gt["annotations"]], open(out, "w"))
PY
"$EXE" cocoeval --gt "$TMP/scenes/annotations.json" --dt "$TMP/perfect.json" > "$TMP/out.txt" \
  2> "$TMP/err.txt" || { cat "$TMP/out.txt" "$TMP/err.txt"; fail "cocoeval of generated data"; }
tail -n 1 "$TMP/out.txt" | python3 -c '
import json, sys
s = json.loads(sys.stdin.read())
assert s["AP"] == s["AP50"] == s["AP75"] == 1.0, s
' || fail "perfect detections of generated scenes do not score AP 1"
gen --out "$TMP/again" --seed 4 --threads 3 > /dev/null || fail "generate again"
diff -r "$TMP/scenes" "$TMP/again" > /dev/null || fail "same seed, other files (3 threads, not 1)"
gen --out "$TMP/other" --seed 5 > /dev/null || fail "generate with another seed"
cmp -s "$TMP/scenes/images/scene_00000.png" "$TMP/other/images/scene_00000.png" &&
  fail "another seed, the same image"

# Sprites from IDX files (MNIST's format): the labels are the classes.
python3 - "$TMP" <<'PY' || fail "writing sprite files"
import struct, sys
def idx(path, dims, values):
    open(path, "wb").write(bytes([0, 0, 8, len(dims)]) + struct.pack(">%dI" % len(dims), *dims)
                            + bytes(values))
block = [255 if 1 <= y < 9 and 1 <= x < 9 else 0 for y in range(10) for x in range(10)]
bar = [255 if 1 <= y < 9 and 4 <= x < 6 else 0 for y in range(10) for x in range(10)]
idx(sys.argv[1] + "/sprites.idx", [2, 10, 10], block + bar)
idx(sys.argv[1] + "/labels.idx", [2], [0, 1])
idx(sys.argv[1] + "/short.idx", [2, 10, 10], block)
PY
"$EXE" generate --out "$TMP/sprites" --images 3 --size 96x80 --sprites "$TMP/sprites.idx" \
  --sprite-labels "$TMP/labels.idx" > "$TMP/out.txt" 2> "$TMP/err.txt" ||
  { cat "$TMP/out.txt" "$TMP/err.txt"; fail "generate with sprites"; }
grep -qE '^wrote 3 images of 96x80 with [0-9]+ objects of 2 classes' "$TMP/out.txt" ||
  fail "generate's summary line with sprites"
python3 -c '
import json, sys
gt = json.load(open(sys.argv[1]))
assert [c["name"] for c in gt["categories"]] == ["0", "1"], gt["categories"]
assert gt["annotations"] and all(a["category_id"] in (1, 2) for a in gt["annotations"])
' "$TMP/sprites/annotations.json" || fail "sprite annotations"
expect_error "short.idx' has 100 bytes of values where its dimensions [2,10,10] need 200" \
  "$EXE" generate --out "$TMP/bad" --sprites "$TMP/short.idx" --sprite-labels "$TMP/labels.idx"
"$EXE" generate --out "$TMP/bad" --sprites "$TMP/sprites.idx" > /dev/null 2>&1 &&
  fail "generate accepted --sprites without --sprite-labels"

# Bad options: named, exit 1, nothing written.
expect_error "min_size 30 > max_size 20" \
  "$EXE" generate --out "$TMP/bad" --min-size 30 --max-size 20
expect_error "num_classes 11 outside 1..10" "$EXE" generate --out "$TMP/bad" --classes 11
expect_error "--size '96' is not WIDTHxHEIGHT" "$EXE" generate --out "$TMP/bad" --size 96
[[ ! -e $TMP/bad ]] || fail "generate wrote into --out despite bad options"
"$EXE" generate --images 1 > /dev/null 2>&1 && fail "generate accepted a missing --out"
echo "dflow-detect: all checks passed"
