/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "seccomp-eval.h"

int64_t seccomp_eval(const struct sock_filter *prog, size_t n, const struct seccomp_data *d) {
        uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = {};
        const uint8_t *data = (const uint8_t *) d;

        if (n == 0 || n > BPF_MAXINSNS)
                return -EINVAL;
        for (size_t pc = 0; pc < n; pc++) {
                const struct sock_filter *f = &prog[pc];
                uint32_t k = f->k;
                switch (f->code) {
                case BPF_LD | BPF_W | BPF_ABS:
                        /* seccomp only allows aligned 32-bit loads inside seccomp_data. */
                        if (k >= sizeof *d || (k & 3))
                                return -EINVAL;
                        memcpy(&A, data + k, 4);
                        break;
                case BPF_LD | BPF_W | BPF_LEN:
                        A = sizeof *d;
                        break;
                case BPF_LDX | BPF_W | BPF_LEN:
                        X = sizeof *d;
                        break;
                case BPF_LD | BPF_IMM:
                        A = k;
                        break;
                case BPF_LDX | BPF_IMM:
                        X = k;
                        break;
                case BPF_LD | BPF_MEM:
                        if (k >= BPF_MEMWORDS)
                                return -EINVAL;
                        A = M[k];
                        break;
                case BPF_LDX | BPF_MEM:
                        if (k >= BPF_MEMWORDS)
                                return -EINVAL;
                        X = M[k];
                        break;
                case BPF_ST:
                        if (k >= BPF_MEMWORDS)
                                return -EINVAL;
                        M[k] = A;
                        break;
                case BPF_STX:
                        if (k >= BPF_MEMWORDS)
                                return -EINVAL;
                        M[k] = X;
                        break;
                case BPF_ALU | BPF_ADD | BPF_K: A += k; break;
                case BPF_ALU | BPF_ADD | BPF_X: A += X; break;
                case BPF_ALU | BPF_SUB | BPF_K: A -= k; break;
                case BPF_ALU | BPF_SUB | BPF_X: A -= X; break;
                case BPF_ALU | BPF_MUL | BPF_K: A *= k; break;
                case BPF_ALU | BPF_MUL | BPF_X: A *= X; break;
                case BPF_ALU | BPF_DIV | BPF_K:
                        if (k == 0)
                                return -EINVAL;
                        A /= k;
                        break;
                case BPF_ALU | BPF_DIV | BPF_X:
                        if (X == 0)
                                return 0; /* the kernel's cBPF returns 0 (kill) on a division by zero */
                        A /= X;
                        break;
                case BPF_ALU | BPF_MOD | BPF_K:
                        if (k == 0)
                                return -EINVAL;
                        A %= k;
                        break;
                case BPF_ALU | BPF_MOD | BPF_X:
                        if (X == 0)
                                return 0;
                        A %= X;
                        break;
                case BPF_ALU | BPF_AND | BPF_K: A &= k; break;
                case BPF_ALU | BPF_AND | BPF_X: A &= X; break;
                case BPF_ALU | BPF_OR | BPF_K: A |= k; break;
                case BPF_ALU | BPF_OR | BPF_X: A |= X; break;
                case BPF_ALU | BPF_XOR | BPF_K: A ^= k; break;
                case BPF_ALU | BPF_XOR | BPF_X: A ^= X; break;
                case BPF_ALU | BPF_LSH | BPF_K: A = k < 32 ? A << k : 0; break;
                case BPF_ALU | BPF_LSH | BPF_X: A = X < 32 ? A << X : 0; break;
                case BPF_ALU | BPF_RSH | BPF_K: A = k < 32 ? A >> k : 0; break;
                case BPF_ALU | BPF_RSH | BPF_X: A = X < 32 ? A >> X : 0; break;
                case BPF_ALU | BPF_NEG: A = -A; break;
                case BPF_JMP | BPF_JA:
                        if (k >= n - pc - 1)
                                return -EINVAL;
                        pc += k;
                        break;
                case BPF_JMP | BPF_JEQ | BPF_K:
                case BPF_JMP | BPF_JEQ | BPF_X:
                case BPF_JMP | BPF_JGT | BPF_K:
                case BPF_JMP | BPF_JGT | BPF_X:
                case BPF_JMP | BPF_JGE | BPF_K:
                case BPF_JMP | BPF_JGE | BPF_X:
                case BPF_JMP | BPF_JSET | BPF_K:
                case BPF_JMP | BPF_JSET | BPF_X: {
                        uint32_t v = BPF_SRC(f->code) == BPF_X ? X : k;
                        bool t;
                        switch (BPF_OP(f->code)) {
                        case BPF_JEQ: t = A == v; break;
                        case BPF_JGT: t = A > v; break;
                        case BPF_JGE: t = A >= v; break;
                        default: t = (A & v) != 0; break;
                        }
                        size_t off = t ? f->jt : f->jf;
                        if (off >= n - pc - 1 && off != 0)
                                return -EINVAL;
                        pc += off;
                        break;
                }
                case BPF_RET | BPF_K:
                        return k;
                case BPF_RET | BPF_A:
                        return A;
                case BPF_MISC | BPF_TAX:
                        X = A;
                        break;
                case BPF_MISC | BPF_TXA:
                        A = X;
                        break;
                default:
                        return -EINVAL;
                }
        }
        /* Falling off the end: the kernel's checker rejects such filters. */
        return -EINVAL;
}
