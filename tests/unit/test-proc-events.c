/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Decoding of proc connector messages on crafted buffers: what the kernel
 * sends, and what a truncated or foreign message looks like. */
#include <errno.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "proc-events.h"
#include "util.h"

/* One netlink message as the kernel builds it: nlmsghdr, cn_msg, proc_event. */
typedef struct Msg {
        struct nlmsghdr nl;
        struct cn_msg cn;
        struct proc_event ev;
} __attribute__((packed)) Msg;

static Msg make(enum what what) {
        Msg m = {};
        m.nl.nlmsg_len = sizeof m;
        m.nl.nlmsg_type = NLMSG_DONE;
        m.cn.id.idx = CN_IDX_PROC;
        m.cn.id.val = CN_VAL_PROC;
        m.cn.len = sizeof m.ev;
        m.ev.what = what;
        m.ev.timestamp_ns = 123456789;
        return m;
}

static void test_decode_each_type(void **state) {
        ProcEvent ev;
        Msg m = make(PROC_EVENT_FORK);
        m.ev.event_data.fork.parent_pid = 10;
        m.ev.event_data.fork.parent_tgid = 10;
        m.ev.event_data.fork.child_pid = 11;
        m.ev.event_data.fork.child_tgid = 11;
        assert_int_equal(proc_event_decode(&m.cn, sizeof m.cn + sizeof m.ev, &ev), 0);
        assert_int_equal(ev.type, PROC_EV_FORK);
        assert_int_equal(ev.pid, 11);
        assert_int_equal(ev.tid, 11);
        assert_int_equal(ev.parent_pid, 10);
        assert_int_equal(ev.timestamp_ns, 123456789);

        /* a new thread: tid != pid */
        m.ev.event_data.fork.child_pid = 12;
        assert_int_equal(proc_event_decode(&m.cn, sizeof m.cn + sizeof m.ev, &ev), 0);
        assert_int_equal(ev.pid, 11);
        assert_int_equal(ev.tid, 12);

        m = make(PROC_EVENT_EXEC);
        m.ev.event_data.exec.process_pid = 20;
        m.ev.event_data.exec.process_tgid = 20;
        assert_int_equal(proc_event_decode(&m.cn, sizeof m.cn + sizeof m.ev, &ev), 0);
        assert_int_equal(ev.type, PROC_EV_EXEC);
        assert_int_equal(ev.pid, 20);

        m = make(PROC_EVENT_EXIT);
        m.ev.event_data.exit.process_pid = 21;
        m.ev.event_data.exit.process_tgid = 21;
        m.ev.event_data.exit.exit_code = 9;
        assert_int_equal(proc_event_decode(&m.cn, sizeof m.cn + sizeof m.ev, &ev), 0);
        assert_int_equal(ev.type, PROC_EV_EXIT);
        assert_int_equal(ev.exit_code, 9);

        m = make(PROC_EVENT_COMM);
        m.ev.event_data.comm.process_pid = 22;
        m.ev.event_data.comm.process_tgid = 22;
        /* 16 bytes without a NUL: the copy stays terminated */
        memcpy(m.ev.event_data.comm.comm, "abcdefghijklmnop", 16);
        assert_int_equal(proc_event_decode(&m.cn, sizeof m.cn + sizeof m.ev, &ev), 0);
        assert_int_equal(ev.type, PROC_EV_COMM);
        assert_string_equal(ev.comm, "abcdefghijklmno");

        m = make(PROC_EVENT_UID);
        m.ev.event_data.id.process_pid = 23;
        m.ev.event_data.id.process_tgid = 23;
        m.ev.event_data.id.e.euid = 1000;
        assert_int_equal(proc_event_decode(&m.cn, sizeof m.cn + sizeof m.ev, &ev), 0);
        assert_int_equal(ev.type, PROC_EV_UID);
        assert_int_equal(ev.uid_effective, 1000);

        m = make(PROC_EVENT_SID);
        assert_int_equal(proc_event_decode(&m.cn, sizeof m.cn + sizeof m.ev, &ev), 0);
        assert_int_equal(ev.type, PROC_EV_OTHER);

        m = make(PROC_EVENT_NONE); /* the ack of our LISTEN */
        assert_int_equal(proc_event_decode(&m.cn, sizeof m.cn + sizeof m.ev, &ev), 0);
        assert_int_equal(ev.type, PROC_EV_ACK);
        assert_int_equal(ev.ack_error, 0);

        /* refused (before 6.6 without CAP_NET_ADMIN): cn_proc_ack() echoes
         * the request's seq, its ack + 1, and the error */
        m = make(PROC_EVENT_NONE);
        m.cn.seq = 4242;
        m.cn.ack = 1;
        m.ev.event_data.ack.err = EPERM;
        assert_int_equal(proc_event_decode(&m.cn, sizeof m.cn + sizeof m.ev, &ev), 0);
        assert_int_equal(ev.type, PROC_EV_ACK);
        assert_int_equal(ev.ack_seq, 4242);
        assert_int_equal(ev.ack_ack, 1);
        assert_int_equal(ev.ack_error, EPERM);
}

static void test_decode_hostile(void **state) {
        ProcEvent ev;
        Msg m = make(PROC_EVENT_EXEC);
        m.ev.event_data.exec.process_pid = 20;
        m.ev.event_data.exec.process_tgid = 20;

        /* shorter than a cn_msg */
        assert_int_equal(proc_event_decode(&m.cn, 4, &ev), -EBADMSG);
        /* cn_msg claims more data than arrived */
        assert_int_equal(proc_event_decode(&m.cn, sizeof m.cn + 8, &ev), -EBADMSG);
        /* another connector's message */
        Msg o = m;
        o.cn.id.idx = CN_IDX_PROC + 1;
        assert_int_equal(proc_event_decode(&o.cn, sizeof o.cn + sizeof o.ev, &ev), -EBADMSG);
        /* a header without the exec body */
        o = m;
        o.cn.len = offsetof(struct proc_event, event_data) + 4;
        assert_int_equal(proc_event_decode(&o.cn, sizeof o.cn + o.cn.len, &ev), -EBADMSG);
        /* pid 0 or negative */
        o = m;
        o.ev.event_data.exec.process_tgid = 0;
        assert_int_equal(proc_event_decode(&o.cn, sizeof o.cn + sizeof o.ev, &ev), -EBADMSG);
        o.ev.event_data.exec.process_tgid = -5;
        assert_int_equal(proc_event_decode(&o.cn, sizeof o.cn + sizeof o.ev, &ev), -EBADMSG);
        /* unaligned buffer */
        unsigned char buf[sizeof m + 1];
        memcpy(buf + 1, &m.cn, sizeof m.cn + sizeof m.ev);
        assert_int_equal(proc_event_decode(buf + 1, sizeof m.cn + sizeof m.ev, &ev), 0);
        assert_int_equal(ev.pid, 20);
}

static int count;
static int last_pid;
static void on_ev(const ProcEvent *ev, void *userdata) {
        count++;
        last_pid = ev->pid;
}

static void test_datagram(void **state) {
        /* two messages back to back, NLMSG_ALIGNed (sizeof Msg is a multiple of 4) */
        Msg two[2] = { make(PROC_EVENT_FORK), make(PROC_EVENT_EXIT) };
        assert_int_equal(sizeof(Msg) % 4, 0);
        two[0].ev.event_data.fork.child_pid = two[0].ev.event_data.fork.child_tgid = 30;
        two[1].ev.event_data.exit.process_pid = two[1].ev.event_data.exit.process_tgid = 31;
        count = 0;
        assert_int_equal(proc_events_decode_datagram(two, sizeof two, on_ev, NULL), 2);
        assert_int_equal(count, 2);
        assert_int_equal(last_pid, 31);

        /* a NOOP message is skipped */
        two[0].nl.nlmsg_type = NLMSG_NOOP;
        count = 0;
        assert_int_equal(proc_events_decode_datagram(two, sizeof two, on_ev, NULL), 1);
        assert_int_equal(count, 1);

        /* an error message, a length past the end, trailing garbage */
        Msg e = make(PROC_EVENT_EXEC);
        e.nl.nlmsg_type = NLMSG_ERROR;
        assert_int_equal(proc_events_decode_datagram(&e, sizeof e, on_ev, NULL), -EBADMSG);
        e = make(PROC_EVENT_EXEC);
        e.nl.nlmsg_len = sizeof e + 100;
        assert_int_equal(proc_events_decode_datagram(&e, sizeof e, on_ev, NULL), -EBADMSG);
        unsigned char junk[sizeof(Msg) + 20] = {};
        Msg g = make(PROC_EVENT_EXEC);
        g.ev.event_data.exec.process_pid = g.ev.event_data.exec.process_tgid = 40;
        memcpy(junk, &g, sizeof g);
        memset(junk + sizeof g, 0xff, 20);
        count = 0;
        assert_int_equal(proc_events_decode_datagram(junk, sizeof junk, on_ev, NULL), -EBADMSG);
        assert_int_equal(count, 1); /* what came before the fault was delivered */
        assert_int_equal(proc_events_decode_datagram(junk, 0, on_ev, NULL), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_decode_each_type),
                cmocka_unit_test(test_decode_hostile),
                cmocka_unit_test(test_datagram),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
