// The Java agent's bench workload: a CPU-bound loop printing the operations it
// did in each half second, so that a steady state can be measured.
public class EmberSpin {
    static volatile long sink;

    static long work(long n) {
        long s = 0;
        for (long i = 0; i < n; i++)
            s = (s * 31 + i) % 1000003;
        return s;
    }

    public static void main(String[] args) {
        final long interval = 500_000_000L;
        long next = System.nanoTime() + interval, ops = 0;
        while (true) {
            sink += work(10000);
            ops++;
            long now = System.nanoTime();
            if (now >= next) {
                System.out.println(ops);
                System.out.flush();
                ops = 0;
                next += interval;
            }
        }
    }
}
