/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* MESSAGE_ID= of the daemon's important journal entries, for
 * `journalctl MESSAGE_ID=...` and for tools that watch for them. Made once
 * with `systemd-id128 new` and never changed: they are an interface,
 * listed in ksmtuned2(8), JOURNAL FIELDS (test-log checks that it lists
 * every one). */

#define KSMTUNED2_MESSAGE_STARTED               "726f25f7a051491583517d710326e24e"
#define KSMTUNED2_MESSAGE_STOPPING              "79287bdc6aa940c98d05390aecd9f96e"
#define KSMTUNED2_MESSAGE_KNOBS_RESTORED        "d844039a6d5c442c8c77971f77df7532"
#define KSMTUNED2_MESSAGE_KNOBS_RESTORE_FAILED  "32741e9eef994807800c151ce49206a7"
#define KSMTUNED2_MESSAGE_RELOADED              "db0b501fb53f4a298bde81ee5c609e39"
#define KSMTUNED2_MESSAGE_RELOAD_FAILED         "4dc7ff49c6014255b39a2ba65bee8542"
#define KSMTUNED2_MESSAGE_SANDBOX_APPLIED       "511ca4df099945fe98b0b1cc0c69e4f1"
#define KSMTUNED2_MESSAGE_ADMIN_REQUEST         "89e0cc802d6a4cd481148e619113944f"
#define KSMTUNED2_MESSAGE_PROCESS_ENABLED       "c8f151ff43444f75aef4d49f4ff6a4d9"
#define KSMTUNED2_MESSAGE_PROCESS_DISABLED      "98b1eca19288489ebe6d2917c3869054"
#define KSMTUNED2_MESSAGE_PROCESS_NOT_CHANGED   "609d246e889e4e79b1295dc37a5af02c"
#define KSMTUNED2_MESSAGE_PROCESS_EXCLUDED      "758e04b8c3ce49ab8dee28513ebcb33b"
#define KSMTUNED2_MESSAGE_PROCESS_READMITTED    "4f3e467bebe0489a93ab00796dde76f3"
