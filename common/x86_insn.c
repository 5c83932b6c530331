#include "common/x86_insn.h"

#include <stdbool.h>
#include <string.h>

/* ---- x86-64 instruction decoder -------------------------------------------
 *
 * Only what the length and the kernel's view of an instruction need: prefixes,
 * encoding, opcode map and byte, ModRM, and the sizes of SIB, displacement
 * and immediate.  Per opcode, a table gives the operand shape; the few
 * opcodes whose validity or immediate depends on ModRM.reg are F_GRP and
 * settled in grp_check().
 */

enum {
	F_M    = 1 << 0,   /* ModRM (+ SIB + displacement) follows */
	F_I8   = 1 << 1,   /* imm8 (or rel8) */
	F_I16  = 1 << 2,   /* imm16 */
	F_IZ   = 1 << 3,   /* imm16 with 66 (and no REX.W), else imm32 */
	F_IV   = 1 << 4,   /* mov r, imm: imm64 with REX.W, imm16 with 66, else imm32 */
	F_MOFF = 1 << 5,   /* moffs: 8 bytes, 4 with 67 */
	F_BAD  = 1 << 6,   /* invalid in 64-bit mode, or undefined */
	F_GRP  = 1 << 7,   /* validity or immediate depends on ModRM: grp_check() */
	F_REL  = 1 << 8,   /* near branch with rel32: 66 would make it rel16 on AMD only: refused */
	F_MREG = 1 << 9,   /* ModRM always names registers (mov cr/dr): no SIB, no displacement */
	F_I32  = 1 << 10,  /* imm32 whatever the prefixes */
};

#define M    F_M
#define I8   F_I8
#define IZ   F_IZ
#define BAD  F_BAD
#define GRP  F_GRP

/* The one-byte opcode map (64-bit mode).  Prefixes and escapes are handled before the table is read. */
static const uint16_t map0[256] = {
	[0x00 ... 0x03] = M, [0x04] = I8, [0x05] = IZ, [0x06 ... 0x07] = BAD,
	[0x08 ... 0x0b] = M, [0x0c] = I8, [0x0d] = IZ, [0x0e] = BAD,
	[0x10 ... 0x13] = M, [0x14] = I8, [0x15] = IZ, [0x16 ... 0x17] = BAD,
	[0x18 ... 0x1b] = M, [0x1c] = I8, [0x1d] = IZ, [0x1e ... 0x1f] = BAD,
	[0x20 ... 0x23] = M, [0x24] = I8, [0x25] = IZ, [0x27] = BAD,
	[0x28 ... 0x2b] = M, [0x2c] = I8, [0x2d] = IZ, [0x2f] = BAD,
	[0x30 ... 0x33] = M, [0x34] = I8, [0x35] = IZ, [0x37] = BAD,
	[0x38 ... 0x3b] = M, [0x3c] = I8, [0x3d] = IZ, [0x3f] = BAD,
	/* 40-4f REX, 50-5f push/pop: no operand bytes */
	[0x60 ... 0x61] = BAD, [0x63] = M, [0x68] = IZ, [0x69] = M | IZ, [0x6a] = I8, [0x6b] = M | I8,
	[0x70 ... 0x7f] = I8,
	[0x80] = M | I8, [0x81] = M | IZ, [0x82] = BAD, [0x83] = M | I8, [0x84 ... 0x8b] = M,
	[0x8c] = M | GRP, [0x8d] = M | GRP, [0x8e] = M | GRP, [0x8f] = M | GRP,
	[0x9a] = BAD,
	[0xa0 ... 0xa3] = F_MOFF, [0xa8] = I8, [0xa9] = IZ,
	[0xb0 ... 0xb7] = I8, [0xb8 ... 0xbf] = F_IV,
	[0xc0 ... 0xc1] = M | I8, [0xc2] = F_I16, [0xc6] = M | GRP, [0xc7] = M | GRP,
	[0xc8] = F_I16 | I8, [0xca] = F_I16, [0xcd] = I8, [0xce] = BAD,
	[0xd0 ... 0xd3] = M, [0xd4 ... 0xd6] = BAD, [0xd8 ... 0xdf] = M | GRP,
	[0xe0 ... 0xe7] = I8, [0xe8 ... 0xe9] = IZ | F_REL, [0xea] = BAD, [0xeb] = I8,
	[0xf6 ... 0xf7] = M | GRP, [0xfe ... 0xff] = M | GRP,
};

/* The two-byte map, 0f xx (0f 38 and 0f 3a are escapes to the three-byte maps). */
static const uint16_t map1[256] = {
	[0x00] = M | GRP, [0x01 ... 0x03] = M, [0x04] = BAD, [0x0a] = BAD, [0x0c] = BAD,
	[0x0d] = M, [0x0f] = M | I8, /* 3DNow!: the opcode is a trailing byte */
	[0x10 ... 0x1f] = M,
	[0x20 ... 0x23] = M | F_MREG, [0x24 ... 0x27] = BAD,
	[0x28 ... 0x2f] = M,
	[0x36] = BAD, [0x39] = BAD, [0x3b ... 0x3f] = BAD,
	[0x40 ... 0x6f] = M,
	[0x70 ... 0x73] = M | I8, [0x74 ... 0x76] = M, [0x78] = M | GRP, [0x79] = M, [0x7a ... 0x7b] = BAD,
	[0x7c ... 0x7f] = M,
	[0x80 ... 0x8f] = IZ | F_REL,
	[0x90 ... 0x9f] = M,
	[0xa3] = M, [0xa4] = M | I8, [0xa5] = M, [0xa6 ... 0xa7] = M | GRP /* VIA PadLock */,
	[0xab] = M, [0xac] = M | I8, [0xad ... 0xaf] = M,
	[0xb0 ... 0xb7] = M, [0xb8] = M | GRP, [0xb9] = M, [0xba] = M | I8 | GRP, [0xbb ... 0xbf] = M,
	[0xc0 ... 0xc1] = M, [0xc2] = M | I8, [0xc3] = M, [0xc4 ... 0xc6] = M | I8, [0xc7] = M | GRP,
	[0xd0 ... 0xff] = M,
};

/* Sets of opcode bytes as inclusive [lo, hi] ranges, ending with lo > hi. */
static bool in_ranges(const uint8_t (*r)[2], uint8_t op)
{
	for (; r[0][0] <= r[0][1]; r++)
		if (op >= r[0][0] && op <= r[0][1])
			return true;
	return false;
}

/* Defined opcodes of each map that has gaps (legacy 0f 38 / 0f 3a; VEX 0f, 0f 38, 0f 3a). */
static const uint8_t legacy38_r[][2] = {
	{ 0x00, 0x0b }, { 0x10, 0x10 }, { 0x14, 0x15 }, { 0x17, 0x17 }, { 0x1c, 0x1e }, { 0x20, 0x25 },
	{ 0x28, 0x2b }, { 0x30, 0x35 }, { 0x37, 0x41 }, { 0x80, 0x82 }, { 0xc8, 0xcd }, { 0xcf, 0xcf },
	{ 0xd8, 0xd8 }, { 0xdb, 0xdf }, { 0xf0, 0xf1 }, { 0xf5, 0xf6 }, { 0xf8, 0xfc }, { 1, 0 },
};
static const uint8_t legacy3a_r[][2] = {
	{ 0x08, 0x0f }, { 0x14, 0x17 }, { 0x20, 0x22 }, { 0x40, 0x42 }, { 0x44, 0x44 }, { 0x60, 0x63 },
	{ 0xcc, 0xcc }, { 0xce, 0xcf }, { 0xdf, 0xdf }, { 1, 0 },
};
static const uint8_t vex1_r[][2] = {
	{ 0x10, 0x17 }, { 0x28, 0x2f }, { 0x41, 0x42 }, { 0x44, 0x47 }, { 0x4a, 0x4b }, { 0x50, 0x77 },
	{ 0x7c, 0x7f }, { 0x90, 0x93 }, { 0x98, 0x99 }, { 0xae, 0xae }, { 0xc2, 0xc2 }, { 0xc4, 0xc6 },
	{ 0xd0, 0xfe }, { 1, 0 },
};
static const uint8_t vex2_r[][2] = {
	{ 0x00, 0x0f }, { 0x13, 0x13 }, { 0x16, 0x1a }, { 0x1c, 0x1e }, { 0x20, 0x25 }, { 0x28, 0x41 },
	{ 0x45, 0x47 }, { 0x49, 0x49 }, { 0x4b, 0x4b }, { 0x50, 0x53 }, { 0x58, 0x5a }, { 0x5c, 0x5c },
	{ 0x5e, 0x5e }, { 0x72, 0x72 }, { 0x78, 0x79 }, { 0x8c, 0x8c }, { 0x8e, 0x8e }, { 0x90, 0x93 },
	{ 0x96, 0x9f }, { 0xa6, 0xaf }, { 0xb0, 0xb1 }, { 0xb4, 0xbf }, { 0xcb, 0xcd }, { 0xcf, 0xcf },
	{ 0xd2, 0xd3 }, { 0xda, 0xdf }, { 0xe0, 0xef }, { 0xf2, 0xf3 }, { 0xf5, 0xf7 }, { 1, 0 },
};
static const uint8_t vex3_r[][2] = {
	{ 0x00, 0x02 }, { 0x04, 0x06 }, { 0x08, 0x0f }, { 0x14, 0x19 }, { 0x1d, 0x1d }, { 0x20, 0x22 },
	{ 0x30, 0x33 }, { 0x38, 0x39 }, { 0x40, 0x42 }, { 0x44, 0x44 }, { 0x46, 0x46 }, { 0x48, 0x4c },
	{ 0x5c, 0x5f }, { 0x60, 0x63 }, { 0x68, 0x6f }, { 0x78, 0x7f }, { 0xce, 0xcf }, { 0xde, 0xdf },
	{ 0xf0, 0xf0 }, { 1, 0 },
};

static const uint8_t (*const vex_sets[4])[2] = { NULL, vex1_r, vex2_r, vex3_r };

enum { ENC_LEGACY, ENC_VEX, ENC_EVEX, ENC_XOP };

struct insn {
	uint8_t len;
	uint8_t enc;           /* ENC_* */
	uint8_t map;           /* legacy: 0 one-byte, 1 0f, 2 0f 38, 3 0f 3a; VEX/EVEX/XOP: the m field */
	uint8_t op;            /* the opcode byte within its map */
	uint8_t rex;           /* 0 if none */
	uint8_t rep;           /* the last of f2/f3, or 0 */
	uint8_t modrm;         /* 0 if none */
	bool p66, p67, lock;
	bool seg_old;          /* 26, 2e, 36 or 3e: the kernel refuses these prefixes */
	bool only_rex;         /* no prefix but one REX */
};

static bool is_legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65:
	case 0x66: case 0x67: case 0xf0: case 0xf2: case 0xf3:
		return true;
	}
	return false;
}

/* x87 (d8-df): the register forms and memory forms that are not defined. */
static bool x87_ok(uint8_t op, uint8_t modrm)
{
	unsigned reg = modrm >> 3 & 7;

	if (modrm < 0xc0)
		return !((op == 0xd9 && reg == 1) || (op == 0xdb && (reg == 4 || reg == 6)) || (op == 0xdd && reg == 5));
	switch (op) {
	case 0xd9:
		return !((modrm >= 0xd1 && modrm <= 0xd7) || modrm == 0xe2 || modrm == 0xe3 || modrm == 0xe6 ||
			 modrm == 0xe7 || modrm == 0xef);
	case 0xda:
		return modrm < 0xe0 || modrm == 0xe9;
	case 0xdb:
		return !((modrm >= 0xe5 && modrm <= 0xe7) || modrm >= 0xf8);
	case 0xdd:
		return modrm < 0xf0;
	case 0xde:
		return !(modrm == 0xd8 || (modrm >= 0xda && modrm <= 0xdf));
	case 0xdf:
		return !((modrm >= 0xe1 && modrm <= 0xe7) || modrm >= 0xf8);
	}
	return true;
}

/*
 * Opcodes whose validity (or immediate) depends on ModRM.  Returns false if
 * invalid; adds an immediate's size to *imm.
 */
static bool grp_check(const struct insn *d, unsigned *imm)
{
	unsigned mod = d->modrm >> 6, reg = d->modrm >> 3 & 7;
	bool w = d->rex & 8;

	if (d->map == 0) {
		switch (d->op) {
		case 0x8c: return reg <= 5;                        /* mov r/m, Sreg */
		case 0x8d: return mod != 3;                        /* lea */
		case 0x8e: return reg <= 5 && reg != 1;            /* mov Sreg, r/m (not cs) */
		case 0x8f: return reg == 0;                        /* pop r/m (XOP taken earlier) */
		case 0xc6:
			if (reg == 0 || d->modrm == 0xf8) {        /* mov r/m8, imm8; xabort imm8 */
				*imm += 1;
				return true;
			}
			return false;
		case 0xc7:
			if (reg == 0 || d->modrm == 0xf8) {        /* mov r/m, imm32; xbegin rel32 */
				*imm += (w || !d->p66) ? 4 : 2;
				return true;
			}
			return false;
		case 0xf6:
			if (reg <= 1)                              /* test r/m8, imm8 */
				*imm += 1;
			return true;
		case 0xf7:
			if (reg <= 1)
				*imm += (w || !d->p66) ? 4 : 2;
			return true;
		case 0xfe: return reg <= 1;                        /* inc, dec */
		case 0xff:                                         /* inc dec call callf jmp jmpf push */
			return reg != 7 && !((reg == 3 || reg == 5) && mod == 3);
		}
		if (d->op >= 0xd8 && d->op <= 0xdf)
			return x87_ok(d->op, d->modrm);
		return true;
	}
	switch (d->op) {   /* 0f xx */
	case 0x00: return reg <= 5;
	case 0x78:
		if (d->p66 || d->rep == 0xf2) {                    /* extrq / insertq xmm, imm8, imm8 */
			*imm += 2;
			return mod == 3 && (d->rep == 0xf2 || reg == 0);
		}
		return true;                                       /* vmread */
	case 0xa6:                                                 /* montmul, xsha1, xsha256 */
		return d->modrm == 0xc0 || d->modrm == 0xc8 || d->modrm == 0xd0;
	case 0xa7:                                                 /* xstore, xcrypt-ecb/cbc/ctr/cfb/ofb */
		return d->modrm >= 0xc0 && d->modrm <= 0xe8 && !(d->modrm & 7);
	case 0xb8: return d->rep == 0xf3;                          /* popcnt (jmpe otherwise) */
	case 0xba: return reg >= 4;                                /* bt bts btr btc r/m, imm8 */
	case 0xc7:
		switch (reg) {
		case 1: case 3: case 4: case 5: return mod != 3;   /* cmpxchg8b/16b, xrstors, xsavec, xsaves */
		case 6: case 7: return true;                       /* rdrand rdseed rdpid vmptrld vmptrst ... */
		}
		return false;
	}
	return true;
}

/* Shape of a VEX (map 1..3), EVEX (1, 2, 3, 5, 6) or XOP (8..10) opcode: flags as in the tables. */
static uint16_t vex_flags(uint8_t enc, uint8_t map, uint8_t op)
{
	switch (enc) {
	case ENC_XOP:
		if (map == 8)
			return M | I8;
		if (map == 9)
			return M;
		if (map == 10)
			return M | F_I32;           /* bextr, lwpins, lwpval */
		return BAD;
	case ENC_VEX:
		if (map < 1 || map > 3 || !in_ranges(vex_sets[map], op))
			return BAD;
		break;
	case ENC_EVEX:
		/* EVEX maps are checked for shape only: every opcode has a ModRM. */
		if (map != 1 && map != 2 && map != 3 && map != 5 && map != 6)
			return BAD;
		break;
	}
	if (map == 3)
		return M | I8;
	if (map == 1) {
		if (op == 0x77 && enc == ENC_VEX)
			return 0;               /* vzeroupper, vzeroall */
		if ((op >= 0x70 && op <= 0x73) || op == 0xc2 || (op >= 0xc4 && op <= 0xc6))
			return M | I8;
	}
	return M;
}

static int decode(const uint8_t *p, size_t n, struct insn *d)
{
	size_t max = n < 15 ? n : 15, i = 0;
	unsigned imm = 0;
	uint16_t f;
	int npfx = 0;

	memset(d, 0, sizeof(*d));
	if (!p)
		return -1;
	for (; i < max && is_legacy_prefix(p[i]); i++, npfx++) {
		switch (p[i]) {
		case 0x66: d->p66 = true; break;
		case 0x67: d->p67 = true; break;
		case 0xf0: d->lock = true; break;
		case 0xf2: case 0xf3: d->rep = p[i]; break;
		case 0x26: case 0x2e: case 0x36: case 0x3e: d->seg_old = true; break;
		}
	}
	if (i >= max)
		return -1;
	if ((p[i] & 0xf0) == 0x40) {
		d->rex = p[i++];
		/*
		 * A REX not right before the opcode is ignored by the CPU, one before
		 * fwait (which x87 code treats as a prefix) means nothing: no compiler
		 * emits either.
		 */
		if (i >= max || is_legacy_prefix(p[i]) || (p[i] & 0xf0) == 0x40 || p[i] == 0x9b)
			return -1;
		d->only_rex = npfx == 0;
	}
	d->op = p[i++];
	if (d->op == 0x0f) {
		if (i >= max)
			return -1;
		d->op = p[i++];
		if (d->op == 0x38 || d->op == 0x3a) {
			d->map = d->op == 0x38 ? 2 : 3;
			if (i >= max)
				return -1;
			d->op = p[i++];
			if (d->map == 2)
				f = in_ranges(legacy38_r, d->op) ? M : BAD;
			else
				f = in_ranges(legacy3a_r, d->op) ? M | I8 : BAD;
		} else {
			d->map = 1;
			f = map1[d->op];
		}
	} else if (d->op == 0xc4 || d->op == 0xc5 || d->op == 0x62 ||
		   (d->op == 0x8f && i < max && (p[i] & 0x1f) >= 8)) {
		/* VEX, EVEX, XOP: in 64-bit mode c4/c5/62 are never les/lds/bound. */
		uint8_t b1, b2;

		if (d->p66 || d->rep || d->lock || d->rex)
			return -1;
		if (i >= max)
			return -1;
		b1 = p[i++];
		if (d->op == 0xc5) {
			d->enc = ENC_VEX;
			d->map = 1;
		} else {
			if (i >= max)
				return -1;
			b2 = p[i++];
			if (d->op == 0x62) {
				d->enc = ENC_EVEX;
				d->map = b1 & 7;
				/* P0 bit 3 and a clear P1 bit 2 belong to APX encodings: not known here. */
				if ((b1 & 0x08) || !(b2 & 0x04))
					return -1;
				i++;   /* P2: masking, broadcast, vector length */
			} else {
				d->enc = d->op == 0xc4 ? ENC_VEX : ENC_XOP;
				d->map = b1 & 0x1f;
			}
		}
		if (i >= max)
			return -1;
		d->op = p[i++];
		f = vex_flags(d->enc, d->map, d->op);
	} else {
		f = map0[d->op];
	}
	if (f & F_BAD)
		return -1;
	if ((f & F_REL) && d->p66)
		return -1;
	if (f & F_M) {
		unsigned mod, rm;

		if (i >= max)
			return -1;
		d->modrm = p[i++];
		mod = d->modrm >> 6;
		rm = d->modrm & 7;
		if (!(f & F_MREG) && mod != 3) {
			if (rm == 4) {
				if (i >= max)
					return -1;
				if (mod == 0 && (p[i] & 7) == 5)
					imm += 4;   /* no base: disp32 */
				i++;
			}
			if (mod == 1)
				imm += 1;
			else if (mod == 2 || (mod == 0 && rm == 5))
				imm += 4;   /* disp32, or rip + disp32 */
		}
		if ((f & F_GRP) && !grp_check(d, &imm))
			return -1;
	}
	if (f & F_I8)
		imm += 1;
	if (f & F_I16)
		imm += 2;
	if (f & F_I32)
		imm += 4;
	if (f & F_IZ)
		imm += ((d->rex & 8) || !d->p66) ? 4 : 2;
	if (f & F_IV)
		imm += (d->rex & 8) ? 8 : d->p66 ? 2 : 4;
	if (f & F_MOFF)
		imm += d->p67 ? 4 : 8;
	if (imm > max - i)
		return -1;
	d->len = (uint8_t)(i + imm);
	return 0;
}

int x86_insn__len(const uint8_t *p, size_t n)
{
	struct insn d;

	if (decode(p, n, &d))
		return -1;
	return d.len;
}

/* ---- the kernel's view (arch/x86/kernel/uprobes.c) -------------------------
 *
 * The kernel decodes the probed instruction, refuses some, emulates a few
 * and single-steps a copy of the rest.  Its filter tests the first opcode
 * byte it decoded against a table for the one-byte map (for 0f xx that byte
 * is 0f, which passes; for VEX/EVEX it is the byte after the prefix), and
 * refuses the prefixes 26, 2e, 36, 3e and f0 and a mov to ss.
 */
static const uint8_t kernel_bad_r[][2] = {
	{ 0x06, 0x07 }, { 0x0e, 0x0e }, { 0x16, 0x17 }, { 0x1e, 0x1f }, { 0x27, 0x27 }, { 0x2f, 0x2f },
	{ 0x37, 0x37 }, { 0x3f, 0x3f }, { 0x60, 0x62 }, { 0x6c, 0x6f }, { 0x82, 0x82 }, { 0x9a, 0x9a },
	{ 0xcc, 0xcf }, { 0xd4, 0xd6 }, { 0xe4, 0xe7 }, { 0xea, 0xea }, { 0xec, 0xef }, { 0xf1, 0xf1 },
	{ 0xf4, 0xf4 }, { 0xfa, 0xfb }, { 1, 0 },
};

int x86_insn__class(const uint8_t *p, size_t n)
{
	struct insn d;

	if (decode(p, n, &d) || d.seg_old || d.lock)
		return -1;
	/* The kernel's decoder may not know XOP: it could single-step a copy of the wrong length. */
	if (d.enc == ENC_XOP)
		return -1;
	if (d.enc != ENC_LEGACY) {
		/*
		 * The kernel keeps only the opcode byte of a VEX/EVEX instruction
		 * and its branch and nop emulation look at that byte alone: a
		 * vpshufd (70) would be taken for a jo, a vpsubsb (e8) for a call.
		 */
		if (in_ranges(kernel_bad_r, d.op) || (d.op >= 0x70 && d.op <= 0x7f) || d.op == 0x90 ||
		    d.op == 0xe8 || d.op == 0xe9 || d.op == 0xeb)
			return -1;
		return X86_INSN_STEPPED;
	}
	if (d.map == 1) {
		if (d.op >= 0x80 && d.op <= 0x8f)
			return X86_INSN_EMULATED;          /* jcc rel32 (66 refused by the decoder) */
		if (d.op == 0x1f && (d.modrm >> 3 & 7) == 0)
			return X86_INSN_NOP;               /* nopl/nopw (older kernels single-step it) */
		return X86_INSN_STEPPED;
	}
	if (d.map != 0)
		return X86_INSN_STEPPED;                   /* 0f 38, 0f 3a */
	if (in_ranges(kernel_bad_r, d.op) || (d.op == 0x8e && (d.modrm >> 3 & 7) == 2))
		return -1;
	if (d.op == 0x90) {
		/* 41 90 is xchg %eax,%r8d, which older kernels emulate as a nop (any 90 was one). */
		if (d.rex & 1)
			return -1;
		return d.rep == 0xf3 ? X86_INSN_STEPPED : X86_INSN_NOP;   /* pause */
	}
	if ((d.op >= 0x70 && d.op <= 0x7f) || d.op == 0xe8 || d.op == 0xe9 || d.op == 0xeb)
		return d.p66 ? -1 : X86_INSN_EMULATED;
	if (d.op >= 0x50 && d.op <= 0x57 && (d.len == 1 || (d.len == 2 && d.only_rex && d.rex == 0x41)))
		return X86_INSN_EMULATED;                  /* push %reg, push %r8..%r15 */
	return X86_INSN_STEPPED;
}

int x86_insn__op(const uint8_t *p, size_t n)
{
	struct insn d;

	if (decode(p, n, &d))
		return -1;
	if (d.enc != ENC_LEGACY)
		return X86_OP_OTHER;
	if (d.map == 0 && (d.op == 0xc3 || d.op == 0xc2))
		return X86_OP_RET;
	if (d.map == 0 && d.op == 0xe8)
		return X86_OP_CALL_REL32;
	if ((d.map == 0 && d.op >= 0x70 && d.op <= 0x7f) || (d.map == 1 && d.op >= 0x80 && d.op <= 0x8f))
		return X86_OP_JCC;
	return X86_OP_OTHER;
}
