#version 330 core
// Particles, vertex stage: one point sprite per particle. Colour comes from the particle's
// population (palette lookup) or from its speed, estimated from the previous frame's position.

uniform mat4 view_projection;
uniform float point_size;    // sprite diameter in framebuffer pixels
uniform int colour_mode;     // 0: by population, 1: by speed
uniform vec4 palette[16];    // rgb colour and brightness weight per population label
uniform float speed_scale;   // 1 / (frame interval * speed at the top of the colour map)

in vec3 position;
in vec3 previous;
in float population;

out vec3 sprite_colour;

vec3 speed_colour(float s) {
    // slow: deep blue, middle: white, fast: orange (reads well on black after tone mapping)
    vec3 slow = vec3(0.25, 0.45, 1.0);
    vec3 middle = vec3(0.95, 0.95, 1.0);
    vec3 fast = vec3(1.0, 0.55, 0.15);
    return s < 0.5 ? mix(slow, middle, s * 2.0) : mix(middle, fast, s * 2.0 - 1.0);
}

void main() {
    gl_Position = view_projection * vec4(position, 1.0);
    gl_PointSize = point_size;
    vec4 entry = palette[int(population) & 15];
    if (colour_mode == 1) {
        float s = clamp(length(position - previous) * speed_scale, 0.0, 1.0);
        sprite_colour = speed_colour(s) * entry.a;
    } else {
        sprite_colour = entry.rgb * entry.a;
    }
}
