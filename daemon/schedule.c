/* The release schedule of outcomes per security level. */
#include "schedule.h"

uint64_t schedule_delay_usec(unsigned level, uint64_t quantum_usec, uint64_t timeout_usec,
                             uint64_t ran_usec) {
        uint64_t k;

        if (level >= 3)
                return 0;
        if (ran_usec == 0)
                ran_usec = timeout_usec;
        if (level <= 1)
                return ran_usec > timeout_usec ? ran_usec : timeout_usec;
        if (quantum_usec == 0)
                return ran_usec;
        k = ran_usec / quantum_usec + (ran_usec % quantum_usec != 0);
        if (k == 0)
                k = 1;
        return k > UINT64_MAX / quantum_usec ? UINT64_MAX : k * quantum_usec;
}
