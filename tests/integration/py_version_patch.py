"""py_version_patch.py SRC DST VERSION: a copy of the interpreter SRC whose Py_Version
(the .dynsym symbol's bytes in the file) says VERSION: a CPython build whose layout
ember does not know (tests/integration/test_python_frames.sh).  Only the reported
version changes; the interpreter runs as before."""
import struct, sys
src, dst, ver = sys.argv[1], sys.argv[2], int(sys.argv[3], 0)
b = bytearray(open(src, 'rb').read())
shoff, = struct.unpack_from('<Q', b, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from('<HHH', b, 0x3a)
secs = [struct.unpack_from('<IIQQQQIIQQ', b, shoff + i * shentsize) for i in range(shnum)]
def name_of(strtab, off):
    end = b.index(0, strtab + off)
    return b[strtab + off:end].decode()
hit = None
for s in secs:
    if s[1] != 11:  # SHT_DYNSYM
        continue
    strtab = secs[s[6]][4]
    for i in range(s[5] // 24):
        st_name, st_info, st_other, st_shndx, st_value, st_size = struct.unpack_from('<IBBHQQ', b, s[4] + i * 24)
        if name_of(strtab, st_name) == 'Py_Version':
            sec = secs[st_shndx]
            hit = sec[4] + (st_value - sec[3])
if hit is None:
    sys.exit("no Py_Version")
struct.pack_into('<I', b, hit, ver)
open(dst, 'wb').write(b)
